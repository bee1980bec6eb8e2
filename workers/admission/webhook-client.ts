// Calling one admission webhook: POST an admission.k8s.io/v1 AdmissionReview to its URL
// and check the AdmissionReview that comes back. Only clientConfig.url is reachable from
// a Worker (no cluster service network); a service reference fails as a call error.
// caBundle cannot be applied per request by fetch: https uses the platform's trust store.
import type { KubeObject } from "../../api/types";
import type { RequestView } from "./dynamic-match";

/** upstream ErrCallingWebhook: the call failed; failurePolicy decides what that means. */
export class WebhookCallError extends Error {
  constructor(
    readonly webhook: string,
    readonly reason: string,
  ) {
    super(`failed calling webhook "${webhook}": ${reason}`);
    this.name = "WebhookCallError";
  }
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code?: number; message?: string; reason?: string; details?: Record<string, unknown> };
  patch?: string;
  patchType?: string;
  warnings?: string[];
  auditAnnotations?: Record<string, string>;
}

export interface WebhookSpec {
  name: string;
  clientConfig?: {
    url?: string;
    service?: { namespace?: string; name?: string; path?: string; port?: number };
  };
  timeoutSeconds?: number;
}

export interface ReviewRequest extends RequestView {
  object?: KubeObject | null;
  oldObject?: KubeObject | null;
}

/** The AdmissionReview body sent to a webhook. */
export function admissionReview(request: ReviewRequest): Record<string, unknown> {
  return { kind: "AdmissionReview", apiVersion: "admission.k8s.io/v1", request };
}

/** The URL a webhook is called at, with upstream's `timeout` query parameter. */
export function webhookURL(hook: WebhookSpec): string {
  const cc = hook.clientConfig ?? {};
  if (!cc.url) {
    const s = cc.service ?? {};
    throw new WebhookCallError(
      hook.name,
      `failed to call webhook: service "${s.namespace ?? ""}/${s.name ?? ""}" cannot be reached: edgeplane calls only clientConfig.url webhooks`,
    );
  }
  const u = new URL(cc.url);
  u.searchParams.set("timeout", `${hook.timeoutSeconds ?? 10}s`);
  return u.toString();
}

/** Checks a webhook's reply as upstream's VerifyAdmissionResponse does; returns its response. */
export function verifyReview(uid: string, mutating: boolean, body: unknown): AdmissionResponse {
  const b = (body ?? {}) as Record<string, any>;
  if (b.apiVersion !== "admission.k8s.io/v1" || b.kind !== "AdmissionReview")
    throw new Error(
      `expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got ${b.apiVersion ?? ""}, Kind=${b.kind ?? ""}`,
    );
  const r = b.response;
  if (!r || typeof r !== "object") throw new Error("webhook response was absent");
  if (r.uid !== uid) throw new Error(`expected response.uid="${uid}", got "${r.uid ?? ""}"`);
  if (typeof r.allowed !== "boolean") r.allowed = false;
  if (r.patch !== undefined && r.patch !== null && r.patch !== "") {
    if (!mutating) throw new Error("validating webhook may not return a patch");
    if (r.patchType !== "JSONPatch")
      throw new Error(`webhook returned invalid patchType: "${r.patchType ?? ""}"`);
  } else if (r.patchType) throw new Error("webhook returned patchType without patch");
  return r as AdmissionResponse;
}

/** Decodes a base64 JSONPatch. */
export function decodePatch(patch: string): unknown {
  const bin = atob(patch);
  const bytes = Uint8Array.from(bin, (ch) => ch.charCodeAt(0));
  return JSON.parse(new TextDecoder().decode(bytes));
}

export type Fetcher = (url: string, init: RequestInit) => Promise<Response>;

/** Calls the webhook; every failure (network, timeout, bad reply) is a WebhookCallError. */
export async function callWebhook(
  hook: WebhookSpec,
  request: ReviewRequest,
  mutating: boolean,
  fetcher: Fetcher = (u, i) => fetch(u, i),
): Promise<AdmissionResponse> {
  const url = webhookURL(hook);
  const timeout = (hook.timeoutSeconds ?? 10) * 1000;
  let res: Response;
  try {
    res = await fetcher(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(admissionReview(request)),
      signal: AbortSignal.timeout(timeout),
    });
  } catch (e) {
    const why =
      e instanceof Error && (e.name === "TimeoutError" || e.name === "AbortError")
        ? "context deadline exceeded"
        : e instanceof Error
          ? e.message
          : String(e);
    throw new WebhookCallError(hook.name, `failed to call webhook: Post "${url}": ${why}`);
  }
  let text: string;
  try {
    text = await res.text();
  } catch (e) {
    throw new WebhookCallError(
      hook.name,
      `failed to call webhook: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
  if (res.status < 200 || res.status >= 300) {
    const detail = text.trim()
      ? `an error on the server ("${text.trim().slice(0, 200)}") has prevented the request from succeeding`
      : `the server responded with the status code ${res.status} but did not return more information`;
    throw new WebhookCallError(hook.name, `failed to call webhook: ${detail}`);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (e) {
    throw new WebhookCallError(
      hook.name,
      `received invalid webhook response: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
  try {
    return verifyReview(request.uid, mutating, body);
  } catch (e) {
    throw new WebhookCallError(
      hook.name,
      `received invalid webhook response: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}
