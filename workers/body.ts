// Request bodies: size cap (3 MiB, as upstream), content type, JSON or YAML.
import YAML from "yaml";
import { badRequest, tooLarge, unsupportedMediaType } from "../api/errors";

export const MAX_BODY_BYTES = 3 * 1024 * 1024;

export const PATCH_TYPES = [
  "application/json-patch+json",
  "application/merge-patch+json",
  "application/strategic-merge-patch+json",
  "application/apply-patch+yaml",
  "application/apply-patch+cbor",
];

export function mediaType(contentType: string | null): string {
  return (contentType ?? "").split(";")[0].trim().toLowerCase();
}

/** Reads the body as text, refusing more than the cap without buffering all of it. */
export async function readText(req: Request): Promise<string> {
  const declared = Number(req.headers.get("content-length") ?? "0");
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  if (!req.body) return "";
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let off = 0;
  for (const c of chunks) {
    all.set(c, off);
    off += c.byteLength;
  }
  return new TextDecoder().decode(all);
}

/** Decodes an object body for create/update (JSON or YAML). */
export async function decodeObject(req: Request): Promise<unknown> {
  const type = mediaType(req.headers.get("content-type"));
  const text = await readText(req);
  return parseBody(text, type || "application/json", [
    "application/json",
    "application/yaml",
    "text/yaml",
    "*/*",
  ]);
}

export function parseBody(text: string, type: string, allowed: string[]): unknown {
  if (!allowed.includes(type)) throw unsupportedMediaType(type);
  if (text.trim() === "") throw badRequest("the body of the request was empty");
  if (type.includes("yaml")) {
    let doc: unknown;
    try {
      doc = YAML.parse(text, { strict: true, uniqueKeys: true, maxAliasCount: 100 });
    } catch (e) {
      throw badRequest(`error converting YAML to JSON: ${(e as Error).message.split("\n")[0]}`);
    }
    return doc;
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw badRequest(`couldn't get version/kind; json parse error: ${(e as Error).message}`);
  }
}
