// Request bodies: size cap (3 MiB, as upstream), content type, JSON or YAML.

import YAML from "yaml";
import { concatBytes } from "../../api/bytes";
import { badRequest, tooLarge, unsupportedMediaType } from "../../api/errors";
import { decodeKubeProtobuf, isKubeProtobuf } from "../../api/protobuf/decode";
import { recordAuditRequestObject } from "../audit/index";
import { internalBody } from "../internal";
import {
  type KeyScan,
  lineIndex,
  mayWriteFractions,
  nestsDeeper,
  numberTexts,
  repeatedKeys,
} from "./json-scan";
import { jsonSyntaxError, summarizeBody } from "./json-syntax";

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

/**
 * Reads the body as text, refusing more than the cap without buffering all of it (an
 * in-process request's text as it was made, internal.ts).
 */
export async function readText(req: Request): Promise<string> {
  return internalBody(req) ?? utf8.decode(await readBytes(req));
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
  // A declared length within the cap is enforced by the runtime: read it in one native call,
  // without touching req.body (its stream would be one more runtime object for the isolate
  // to finalize, on every write).
  if (declared > 0 && declared <= MAX_BODY_BYTES && !req.headers.has("transfer-encoding"))
    return new Uint8Array(await req.arrayBuffer());
  if (!req.body) {
    if (declared > MAX_BODY_BYTES) throw tooLarge();
    return new Uint8Array(0);
  }
  if (declared > MAX_BODY_BYTES) {
    await drain(req.body.getReader(), 0);
    throw tooLarge();
  }
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

/**
 * Keys a body repeats in one object. Decoding keeps the last value, as upstream's decoders
 * do; fieldValidation reports them (field-validation.ts): JSON text by field path, YAML as
 * the YAML reader words it.
 */
export type Repeats = { json: KeyScan } | { yaml: string[] };

/** A decoded body, and the keys it repeats (none when it repeats none). */
export interface Decoded {
  value: unknown;
  repeats?: Repeats;
  /** a JSON body's value again, its numbers written with a fraction or exponent kept as text (json-scan.ts) */
  numbers?: () => unknown;
}

/**
 * Errors of a body that is not JSON or YAML at all, with why (a JSON body's fault in Go's
 * words, or the YAML reader's message): decodeBody and decodePatch word them as upstream.
 */
const undecodable = new WeakMap<Error, string>();

function cannotDecode(message: string, why: string): Error {
  const e = badRequest(message);
  undecodable.set(e, why);
  return e;
}

const JSON_EOF = "couldn't get version/kind; json parse error: unexpected end of JSON input";

/**
 * Decodes an object body (JSON, YAML, or Kubernetes protobuf as typed clients send it).
 * With `kind`, the type a create or update decodes into, a body that is not JSON or YAML
 * is refused as upstream refuses it: `the object provided is unrecognized (must be of type
 * Pod): <why> (<the body's first 30 bytes>)`.
 */
export async function decodeBody(req: Request, kind?: string): Promise<Decoded> {
  const type = mediaType(req.headers.get("content-type"));
  // an in-process request's text as it was made (internal.ts); any other body read whole
  const made = isKubeProtobuf(type) ? undefined : internalBody(req);
  const bytes = made === undefined ? await readBytes(req) : undefined;
  let decoded: Decoded;
  if (bytes && isKubeProtobuf(type)) {
    if (bytes.byteLength === 0) throw badRequest("the body of the request was empty");
    decoded = { value: decodeKubeProtobuf(bytes).object };
  } else {
    const text = made ?? utf8.decode(bytes);
    const unrecognized = (why: string) =>
      badRequest(
        `the object provided is unrecognized (must be of type ${kind}): ${why} (${summarizeBody(bytes ?? new TextEncoder().encode(text))})`,
      );
    // upstream reads an empty JSON body as cut short
    if (kind && !type.includes("yaml") && text.trim() === "") throw unrecognized(JSON_EOF);
    try {
      decoded = decodeText(text, type || "application/json", OBJECT_TYPES);
    } catch (e) {
      throw kind && undecodable.has(e as Error) ? unrecognized((e as Error).message) : e;
    }
  }
  recordAuditRequestObject(req, decoded.value);
  return decoded;
}

/** decodeBody's value alone, for bodies whose repeated keys nothing reports. */
export async function decodeObject(req: Request): Promise<unknown> {
  return (await decodeBody(req)).value;
}

/** The YAML reader's words for a key repeated on a line. */
const yamlRepeat = (line: number, key: string) =>
  `line ${line}: key ${JSON.stringify(key)} already set in map`;

/**
 * A YAML body that is JSON text (what kubectl sends for server-side apply), read as JSON: it
 * means the same, and the YAML reader took ~0.7 ms for a 1.7 KB pod, more than the rest of a
 * create, and seconds for a large one. Repeated keys are found by a scan, and worded as the
 * YAML reader words them.
 */
function asJson(text: string): Decoded | undefined {
  const first = text.trimStart()[0];
  if (first !== "{" && first !== "[") return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined; // YAML's flow style is wider than JSON: let the YAML reader judge
  }
  checkNesting(text);
  const scan = repeatedKeys(text, value);
  if (!scan) return { value };
  const line = lineIndex(text);
  return { value, repeats: { yaml: scan.repeats.map((r) => yamlRepeat(line(r.at), r.key)) } };
}

/** Octal as Go writes it, which go-yaml v2 reads (it parses integers as Go does): 0o17. */
const GO_OCTAL: YAML.ScalarTag = {
  tag: "tag:yaml.org,2002:int",
  format: "OCT",
  default: true,
  identify: () => false, // never chosen to write a value
  test: /^[-+]?0o[0-7_]+$/,
  resolve: (s) => {
    const digits = s.replace(/[_+]/g, "");
    const n = Number.parseInt(digits.replace(/^-?0o/, ""), 8);
    return digits.startsWith("-") ? -n : n;
  },
};

/** Tags of YAML 1.1 that go-yaml v2 does not resolve into JSON-able values, or not at all. */
const NOT_READ = ["timestamp", "binary", "omap", "pairs", "set"];
const NOT_READ_TAGS = new Set(NOT_READ.map((t) => `tag:yaml.org,2002:${t}`));
/** the same, as the yaml library names them where a schema lists tags by name */
const NOT_READ_NAMES = new Set([...NOT_READ, "intTime", "floatTime"]);

/**
 * YAML 1.1, as kube-apiserver's reader (go-yaml v2) takes it: yes, no, on, off, y and n are
 * booleans, 010 is octal, 1_000 is a thousand and `<<` merges maps; but a date stays a
 * string, 12:30 is not a number in base 60, and !!binary, !!set, !!omap and !!pairs are not
 * read.
 */
const YAML_11 = {
  version: "1.1" as const,
  customTags: (tags: YAML.Tags) => [
    ...tags.filter((t) =>
      typeof t === "string"
        ? !NOT_READ_NAMES.has(t)
        : !(("format" in t && t.format === "TIME") || NOT_READ_TAGS.has(t.tag)),
    ),
    GO_OCTAL,
  ],
};

/** A number JSON cannot hold (.inf, .nan) is an error, as Go's JSON encoder makes it. */
function finiteOnly(_key: string, v: unknown): unknown {
  if (typeof v === "number" && !Number.isFinite(v))
    throw new Error(`json: unsupported value: ${Number.isNaN(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf"}`);
  return v;
}

/**
 * A YAML document as JSON data, and the keys it repeats (the later value wins). The reader's
 * own check for repeated keys compares each key with every earlier one of its map (a 2.9 MB
 * ConfigMap of 40,000 keys took 11 s; 0.5 s without it), so keys are checked here, once each.
 */
function readYaml(text: string): { value: unknown; repeats: string[] } {
  const lineCounter = new YAML.LineCounter();
  const doc = YAML.parseDocument(text, { ...YAML_11, strict: true, uniqueKeys: false, lineCounter });
  if (doc.errors.length > 0) throw doc.errors[0];
  const repeats: string[] = [];
  collectRepeats(doc.contents, (offset, key) =>
    repeats.push(yamlRepeat(lineCounter.linePos(offset).line, key)),
  );
  return { value: doc.toJS({ maxAliasCount: 100 }), repeats };
}

/** Each key repeated in one map of a YAML node tree, in document order (as JSON keys: 1 and "1" are one). */
function collectRepeats(node: unknown, found: (offset: number, key: string) => void): void {
  if (YAML.isMap(node)) {
    const keys = new Set<string>();
    for (const pair of node.items) {
      const k = YAML.isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
      if (keys.has(k)) found((YAML.isNode(pair.key) && pair.key.range?.[0]) || 0, k);
      keys.add(k);
      collectRepeats(pair.value, found);
    }
  } else if (YAML.isSeq(node)) {
    for (const item of node.items) collectRepeats(item, found);
  }
}

/** Decodes a JSON or YAML body of media type `type`, one of `allowed`. */
export function decodeText(text: string, type: string, allowed: string[]): Decoded {
  if (!allowed.includes(type)) throw unsupportedMediaType(type);
  if (text.trim() === "") throw badRequest("the body of the request was empty");
  if (type.includes("yaml")) {
    const json = asJson(text);
    if (json) return json;
    let flat: string;
    let repeats: string[];
    try {
      const read = readYaml(text);
      repeats = read.repeats;
      // a self-referencing alias parses into a cycle, which no JSON document can be
      flat = JSON.stringify(read.value, finiteOnly) ?? "null";
    } catch (e) {
      const why = `error converting YAML to JSON: ${(e as Error).message.split("\n")[0]}`;
      throw cannotDecode(why, why);
    }
    checkNesting(flat);
    return repeats.length
      ? { value: JSON.parse(flat), repeats: { yaml: repeats } }
      : { value: JSON.parse(flat) };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    // in Go's words where the walk finds the fault (it always should), else in JavaScript's
    const why = jsonSyntaxError(new TextEncoder().encode(text)) ?? (e as Error).message;
    throw cannotDecode(`couldn't get version/kind; json parse error: ${why}`, why);
  }
  checkNesting(text);
  const scan = repeatedKeys(text, value);
  const decoded: Decoded = scan ? { value, repeats: { json: scan } } : { value };
  if (mayWriteFractions(text)) decoded.numbers = () => numberTexts(text);
  return decoded;
}

/**
 * Decodes a patch body of media type `type`. One that is not JSON (YAML for an apply) is
 * refused in the words upstream's patcher for that type uses: a strategic merge patch gives
 * the reader's message alone; merge and JSON patches, read strictly unless fieldValidation
 * is Ignore, give it after "error decoding patch: " (then a merge patch is "Invalid JSON
 * Patch" and a JSON patch the message alone); an apply gives "error decoding YAML: ...".
 */
export function decodePatch(text: string, type: string, allowed: string[], fieldValidation: string): Decoded {
  try {
    return decodeText(text, type, allowed);
  } catch (e) {
    const why = undecodable.get(e as Error);
    if (why === undefined) throw e;
    const ignore = fieldValidation === "Ignore";
    if (type === "application/strategic-merge-patch+json") throw badRequest(why);
    if (type === "application/merge-patch+json")
      throw badRequest(ignore ? "Invalid JSON Patch" : `error decoding patch: ${why}`);
    if (type === "application/json-patch+json")
      throw badRequest(ignore ? why : `error decoding patch: ${why}`);
    throw badRequest(`error decoding YAML: ${why}`);
  }
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
