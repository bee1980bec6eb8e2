// Server-side field validation (fieldValidation=Strict|Warn|Ignore): unknown fields, and
// keys a body repeats in one object, are an error, warnings, or ignored. The schema walk
// lives with the OpenAPI documents; the repeated keys are found while decoding (encoding/request-body.ts).
// What is reported, and in what order, follows kube-apiserver's field validation tests.
import { badRequest } from "../../api/errors";
import type { KubeObject } from "../../api/types";
import { decodeTypeError } from "../discovery/decode-types";
import { knownFieldsCheck, pruneUnknownFields, unknownFieldMessages } from "../discovery/fields";
import type { KeyScan } from "../encoding/json-scan";
import type { Decoded } from "../encoding/request-body";
import type { WriteContext } from "./write-context";

/** What decoding found that is reported beside the unknown fields. */
export interface Found {
  /** reported before the unknown fields: as warnings, and as pieces of the Strict error */
  before?: { warnings: string[]; error: string[] };
  /** a JSON object body's repeated keys, reported in text order among its unknown fields */
  keys?: KeyScan;
  /**
   * unknown fields in sorted key order: upstream meets them in JSON re-encoded from a map
   * (a YAML body, a patched object), whose keys Go writes sorted
   */
  sorted?: boolean;
  /**
   * what the Strict error starts with: a create or update body is decoded into its type,
   * and upstream words that failure `Pod in version "v1" cannot be handled as a Pod: ...`
   */
  decoding?: string;
  /** the body's value again, its numbers written with a fraction or exponent kept as text */
  numbers?: () => unknown;
}

const duplicateField = (path: string) => `duplicate field ${JSON.stringify(path)}`;

/** The YAML reader's repeated keys, as one Strict error and a warning per line. */
function yamlFound(lines: string[]): { warnings: string[]; error: string[] } {
  return { warnings: lines, error: [`yaml: unmarshal errors:\n${lines.map((l) => `  ${l}`).join("\n")}`] };
}

/** How upstream starts the error of a body of `kind` it could not decode into type `into`. */
export function decodingFailed(kind: string, apiVersion: string, into = kind): string {
  return `${kind} in version ${JSON.stringify(apiVersion.split("/").pop())} cannot be handled as a ${into}: `;
}

/** What a create or update body of `kind` found: its repeated keys. */
export function objectFound(d: Decoded, obj: KubeObject, kind: string): Found {
  // a body without apiVersion or kind is read as the URL's (every kind checked here is in a v1)
  const decoding = decodingFailed(obj.kind ?? kind, obj.apiVersion ?? "v1", kind);
  const numbers = d.numbers;
  if (!d.repeats) return { decoding, numbers };
  if ("yaml" in d.repeats) return { before: yamlFound(d.repeats.yaml), sorted: true, decoding };
  return { keys: d.repeats.json, decoding, numbers };
}

/** The fields of a JSON patch operation (upstream decodes each into a struct of these). */
const PATCH_OP_FIELDS = new Set(["op", "path", "from", "value"]);

/**
 * What a merge, strategic merge or JSON patch body found: its repeated keys (the patch is
 * decoded into a map, so each is a duplicate, known field or not), and for a JSON patch the
 * unknown fields of its operations, all in text order and before the patched object's
 * unknown fields. Server-side apply's YAML is checked by applyRepeats.
 */
export function patchFound(d: Decoded, type: string): Found {
  const prefix = type === "application/json-patch+json" ? "json patch " : "";
  const items: { at: number; message: string }[] = [];
  const keys = d.repeats && "json" in d.repeats ? d.repeats.json : undefined;
  if (prefix && Array.isArray(d.value)) {
    d.value.forEach((op, i) => {
      if (!op || typeof op !== "object" || Array.isArray(op)) return;
      for (const k of Object.keys(op)) {
        if (PATCH_OP_FIELDS.has(k)) continue;
        const path = `[${i}].${k}`;
        items.push({
          at: keys?.firstAt.get(path) ?? items.length,
          message: `${prefix}unknown field "${path}"`,
        });
      }
    });
  }
  for (const r of keys?.repeats ?? []) {
    const op = /^\[\d+\]\.([^.[]+)$/.exec(r.path);
    if (prefix && op && !PATCH_OP_FIELDS.has(op[1])) continue; // an unknown field, said once
    items.push({ at: r.at, message: `${prefix}${duplicateField(r.path)}` });
  }
  const messages = items.sort((a, b) => a.at - b.at).map((x) => x.message);
  return { before: { warnings: messages, error: messages }, sorted: true };
}

/**
 * Server-side apply's repeated keys: a 400 under Strict, worded as upstream's strict YAML
 * decoding; warnings under Warn.
 */
export function applyRepeats(w: WriteContext, d: Decoded): void {
  if (!d.repeats || w.fieldValidation === "Ignore") return;
  const lines = "yaml" in d.repeats ? d.repeats.yaml : [];
  if (w.fieldValidation === "Warn") {
    w.warnings.push(...lines);
    return;
  }
  const error = yamlFound(lines).error[0];
  throw badRequest(`error strict decoding YAML: error converting YAML to JSON: ${error}`);
}

/** Whether path `p` is one of `unknown` or lies inside one: its own and each parent's path looked up once. */
function within(p: string, unknown: ReadonlySet<string>): boolean {
  for (let i = 1; i <= p.length; i++)
    if ((i === p.length || p[i] === "." || p[i] === "[") && unknown.has(p.slice(0, i))) return true;
  return false;
}

/** A field path's segments: names, and list indexes as numbers. */
function segments(path: string): (string | number)[] {
  const out: (string | number)[] = [];
  for (const m of path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) out.push(m[2] !== undefined ? Number(m[2]) : m[1]);
  return out;
}

/** Field paths in the order a walk over objects with sorted keys meets them (each path split once). */
function inSortedKeyOrder(paths: readonly string[]): string[] {
  const split = paths.map((p) => ({ p, s: segments(p) }));
  split.sort(({ s: x }, { s: y }) => {
    for (let i = 0; i < Math.min(x.length, y.length); i++) {
      if (x[i] === y[i]) continue;
      return x[i] < y[i] ? -1 : 1;
    }
    return x.length - y.length;
  });
  return split.map((x) => x.p);
}

/** The unknown fields and repeated keys, worded and ordered as upstream reports them. */
function reports(unknown: string[], found: Found, strict: boolean): string[] {
  const before = (strict ? found.before?.error : found.before?.warnings) ?? [];
  if (found.sorted) return [...before, ...unknownFieldMessages(inSortedKeyOrder(unknown))];
  const keys = found.keys;
  if (!keys) return [...before, ...unknownFieldMessages(unknown)];
  // a field both unknown and repeated (or inside an unknown one) is reported as unknown, once
  const unknownPaths = new Set(unknown);
  const items = [
    ...unknown.map((p) => ({
      at: keys.firstAt.get(p) ?? Number.MAX_SAFE_INTEGER,
      message: unknownFieldMessages([p])[0],
    })),
    ...keys.repeats
      .filter((r) => !within(r.path, unknownPaths))
      .map((r) => ({ at: r.at, message: duplicateField(r.path) })),
  ];
  return [...before, ...items.sort((a, b) => a.at - b.at).map((x) => x.message)];
}

/**
 * Strict: unknown fields and repeated keys are a 400. Warn: they are warnings. Ignore: they
 * pass. Unknown fields are dropped under Warn and Ignore; a repeated key keeps its last value.
 */
export function checkFields(w: WriteContext, obj: KubeObject, found: Found = {}): void {
  // a body decoded into its type (a create or an update): a value its field cannot hold
  // fails first, whatever the fieldValidation, as upstream's decoding fails
  if (found.decoding !== undefined) {
    const wrong = decodeTypeError(obj.apiVersion ?? "", obj.kind ?? "", obj, "json", found.numbers);
    if (wrong) throw badRequest(`${found.decoding}${wrong}`);
  }
  // a custom resource's schema prunes what it does not declare (upstream's structural pruning)
  const pruned = w.def.strategy.prune?.(obj).map((p) => p.replace(/^\./, ""));
  if (w.fieldValidation === "Strict") {
    const all = reports(pruned ?? knownFieldsCheck(obj.apiVersion ?? "", obj.kind ?? "", obj), found, true);
    if (all.length) throw badRequest(`${found.decoding ?? ""}strict decoding error: ${all.join(", ")}`);
    return;
  }
  const dropped = pruned ?? pruneUnknownFields(obj.apiVersion ?? "", obj.kind ?? "", obj);
  if (w.fieldValidation === "Warn") w.warnings.push(...reports(dropped, found, false));
}
