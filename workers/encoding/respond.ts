// Responses: JSON (or YAML when asked), and every error as a metav1.Status, mapped here
// in one place so no handler writes its own error body.
import { badRequest, internalError, type Status, StatusError } from "../../api/errors";
import { statusJSON } from "../../api/status-json";
import { toYaml } from "./yaml-out";

export function json(body: unknown, code = 200, headers: Record<string, string> = {}): Response {
  return new Response(typeof body === "string" ? body : JSON.stringify(body), {
    status: code,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** A body that already is JSON text, re-encoded as YAML if that is what the client accepts. */
export function encoded(
  text: string,
  code: number,
  accept: string | null,
  headers: Record<string, string> = {},
): Response {
  if (wantsYaml(accept)) {
    return new Response(toYaml(JSON.parse(text)), {
      status: code,
      headers: { "content-type": "application/yaml", ...headers },
    });
  }
  return json(text, code, headers);
}

/** Whether the client asks for YAML first. */
export function wantsYaml(accept: string | null): boolean {
  if (!accept) return false;
  const first = accept.split(",")[0].trim().split(";")[0];
  return first === "application/yaml";
}

export function statusResponse(s: Status): Response {
  const headers: Record<string, string> = {};
  // a 429 says when to come back only if it knows (an exhausted disruption budget does not)
  const after = s.details?.retryAfterSeconds;
  if (after && (s.code === 429 || s.code === 503 || s.code === 504)) headers["retry-after"] = String(after);
  else if (s.code === 503 || s.code === 504) headers["retry-after"] = "1";
  // upstream's bytes: field order, escapes and the closing newline (api/status-json.ts)
  return json(statusJSON(s), s.code, headers);
}

export function errorResponse(e: unknown): Response {
  if (e instanceof StatusError) return statusResponse(e.toStatus());
  // a percent-decode of client input that was not checked first is the client's error, not ours
  if (e instanceof URIError)
    return statusResponse(badRequest(`malformed URL encoding: ${e.message}`).toStatus());
  console.error("unexpected error", e instanceof Error ? (e.stack ?? e.message) : e);
  return statusResponse(internalError("an internal error occurred").toStatus());
}

export function success(details: Record<string, unknown>, code = 200): Response {
  return json({ kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", details }, code);
}
