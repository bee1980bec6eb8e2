// Request bodies: size cap (3 MiB, as upstream), content type, JSON or YAML.

import YAML from "yaml";
import { concatBytes } from "../api/bytes";
import { badRequest, tooLarge, unsupportedMediaType } from "../api/errors";
import { decodeKubeProtobuf, isKubeProtobuf } from "../api/protobuf/decode";
import { recordAuditRequestObject } from "./audit/index";
import { duplicateKey, nestsDeeper } from "./json-scan";

export const MAX_BODY_BYTES = 3 * 1024 * 1024;

/** One decoder for every body (it keeps no state between whole-buffer decodes). */
const utf8 = new TextDecoder();

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
  return utf8.decode(await readBytes(req));
}

/**
 * Reads what is left of a refused body (up to 16 times the cap) so the client gets the
 * 413 on a connection that is still in step, rather than a reset while it is sending.
 */
async function drain(reader: ReadableStreamDefaultReader<Uint8Array>, already: number): Promise<void> {
  for (let drained = already; drained < 16 * MAX_BODY_BYTES; ) {
    const next = await reader.read();
    if (next.done) break;
    drained += next.value.byteLength;
  }
  await reader.cancel().catch(() => {});
}

/** Reads the body as bytes, refusing more than the cap without buffering all of it. */
export async function readBytes(req: Request): Promise<Uint8Array> {
  const declared = Number(req.headers.get("content-length") ?? "0");
  if (!req.body) {
    if (declared > MAX_BODY_BYTES) throw tooLarge();
    return new Uint8Array(0);
  }
  if (declared > MAX_BODY_BYTES) {
    await drain(req.body.getReader(), 0);
    throw tooLarge();
  }
  // a declared length within the cap is enforced by the runtime: read it in one native call
  if (declared > 0 && !req.headers.has("transfer-encoding")) return new Uint8Array(await req.arrayBuffer());
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await drain(reader, size);
      throw tooLarge();
    }
    chunks.push(value);
  }
  return concatBytes(chunks);
}

const OBJECT_TYPES = ["application/json", "application/yaml", "text/yaml", "*/*"];

/** Decodes an object body (JSON, YAML, or Kubernetes protobuf as typed clients send it). */
export async function decodeObject(req: Request): Promise<unknown> {
  const type = mediaType(req.headers.get("content-type"));
  const bytes = await readBytes(req);
  let obj: unknown;
  if (isKubeProtobuf(type)) {
    if (bytes.byteLength === 0) throw badRequest("the body of the request was empty");
    obj = decodeKubeProtobuf(bytes).object;
  } else {
    obj = parseBody(utf8.decode(bytes), type || "application/json", OBJECT_TYPES);
  }
  recordAuditRequestObject(req, obj);
  return obj;
}

const NOT_JSON = Symbol("not JSON");

/**
 * A YAML body that is JSON text (what kubectl sends for server-side apply), read as JSON: it
 * means the same, and the YAML reader took ~0.7 ms for a 1.7 KB pod, more than the rest of a
 * create, and seconds for a large one. A key repeated in one object is refused as the YAML
 * reader refuses it.
 */
function asJson(text: string): unknown {
  const first = text.trimStart()[0];
  if (first !== "{" && first !== "[") return NOT_JSON;
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return NOT_JSON; // YAML's flow style is wider than JSON: let the YAML reader judge
  }
  checkNesting(text);
  const twice = duplicateKey(text);
  if (twice !== undefined) throw badRequest(`error converting YAML to JSON: ${repeated(twice)}`);
  return doc;
}

/**
 * A YAML document as JSON data. The reader's own check for repeated keys compares each key
 * with every earlier one of its map (a 2.9 MB ConfigMap of 40,000 keys took 11 s; 0.5 s
 * without it), so keys are checked here, once each.
 */
function readYaml(text: string): unknown {
  const doc = YAML.parseDocument(text, { strict: true, uniqueKeys: false });
  if (doc.errors.length > 0) throw doc.errors[0];
  const twice = repeatedKey(doc.contents);
  if (twice !== undefined) throw new Error(repeated(twice));
  return doc.toJS({ maxAliasCount: 100 });
}

/** What a body with `key` twice in one map is told, whether it was read as JSON or as YAML. */
const repeated = (key: string) => `Map keys must be unique: ${JSON.stringify(key)}`;

/** The first key repeated in one map of a YAML node tree (as JSON keys: 1 and "1" are one). */
function repeatedKey(node: unknown): string | undefined {
  if (YAML.isMap(node)) {
    const keys = new Set<string>();
    for (const pair of node.items) {
      const k = YAML.isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
      if (keys.has(k)) return k;
      keys.add(k);
      const inner = repeatedKey(pair.value);
      if (inner !== undefined) return inner;
    }
  } else if (YAML.isSeq(node)) {
    for (const item of node.items) {
      const inner = repeatedKey(item);
      if (inner !== undefined) return inner;
    }
  }
  return undefined;
}

export function parseBody(text: string, type: string, allowed: string[]): unknown {
  if (!allowed.includes(type)) throw unsupportedMediaType(type);
  if (text.trim() === "") throw badRequest("the body of the request was empty");
  if (type.includes("yaml")) {
    const json = asJson(text);
    if (json !== NOT_JSON) return json;
    let flat: string;
    try {
      // a self-referencing alias parses into a cycle, which no JSON document can be
      flat = JSON.stringify(readYaml(text)) ?? "null";
    } catch (e) {
      throw badRequest(`error converting YAML to JSON: ${(e as Error).message.split("\n")[0]}`);
    }
    checkNesting(flat);
    return JSON.parse(flat);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw badRequest(`couldn't get version/kind; json parse error: ${(e as Error).message}`);
  }
  checkNesting(text);
  return doc;
}

/**
 * How deeply a body may nest. Go's JSON reader, kube-apiserver's, stops at 10,000; here the
 * walks over a value recurse on a smaller stack, and no Kubernetes object comes near 1,000.
 */
export const MAX_NESTING = 1000;

function checkNesting(json: string): void {
  // nesting deeper than MAX_NESTING takes more than twice as many characters
  if (json.length > 2 * MAX_NESTING && nestsDeeper(json, MAX_NESTING))
    throw badRequest(`the request body nests more than ${MAX_NESTING} levels deep`);
}
