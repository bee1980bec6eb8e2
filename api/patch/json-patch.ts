// RFC 6902 JSON Patch, with the behaviour of the library kube-apiserver uses
// (evanphx/json-patch v4): a document that is not a list of operations is
// 400 BadRequest; an operation that cannot be applied is 422 Invalid with
// the generic message (see k8s.io/apiserver/pkg/endpoints/handlers/patch.go).

import { badRequest, StatusError } from "../errors";
import { clone, deepEqual, isObject, type JsonObject, patchNotApplicable } from "./util";

export const MAX_JSON_PATCH_OPERATIONS = 10000;
/**
 * The most a patch's copy operations may add, in bytes of JSON, together (kube-apiserver's
 * JSONPatchMaxCopyBytes default). Copies can double a document with each operation: 30 of
 * them in one small patch would ask for gigabytes.
 */
export const MAX_JSON_PATCH_COPY_BYTES = 3 * 1024 * 1024;

type Container = JsonObject | unknown[];

/** Splits a JSON pointer ("/a/b~1c") into unescaped tokens; "" is the root. */
export function parsePointer(pointer: string): string[] {
  if (pointer === "") return [];
  if (!pointer.startsWith("/"))
    throw patchNotApplicable(`JSON pointer must be empty or start with a "/": ${pointer}`);
  return pointer
    .slice(1)
    .split("/")
    .map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function arrayIndex(token: string, length: number, forAdd: boolean, path: string): number {
  if (forAdd && token === "-") return length;
  if (!/^\d+$/.test(token))
    throw patchNotApplicable(`invalid array index ${JSON.stringify(token)} in ${path}`);
  const i = Number(token);
  if (i > length || (!forAdd && i === length)) throw patchNotApplicable(`array index out of bounds: ${path}`);
  return i;
}

/** Walks to the parent of the last token; the parent must exist. */
function parentOf(doc: unknown, tokens: string[], path: string): Container {
  let cur: unknown = doc;
  for (const t of tokens.slice(0, -1)) {
    if (Array.isArray(cur)) {
      cur = cur[arrayIndex(t, cur.length, false, path)];
    } else if (isObject(cur) && Object.hasOwn(cur, t)) {
      cur = cur[t];
    } else {
      throw patchNotApplicable(`doc is missing path: ${JSON.stringify(path)}`);
    }
  }
  if (!Array.isArray(cur) && !isObject(cur))
    throw patchNotApplicable(`doc is missing path: ${JSON.stringify(path)}`);
  return cur;
}

function getValue(doc: unknown, path: string): { found: boolean; value?: unknown } {
  let cur: unknown = doc;
  for (const t of parsePointer(path)) {
    if (Array.isArray(cur)) {
      if (!/^\d+$/.test(t) || Number(t) >= cur.length) return { found: false };
      cur = cur[Number(t)];
    } else if (isObject(cur) && Object.hasOwn(cur, t)) {
      cur = cur[t];
    } else {
      return { found: false };
    }
  }
  return { found: true, value: cur };
}

function addValue(doc: unknown, path: string, value: unknown): unknown {
  const tokens = parsePointer(path);
  if (tokens.length === 0) return value;
  const parent = parentOf(doc, tokens, path);
  const last = tokens[tokens.length - 1];
  if (Array.isArray(parent)) parent.splice(arrayIndex(last, parent.length, true, path), 0, value);
  else parent[last] = value;
  return doc;
}

function removeValue(doc: unknown, path: string, op: string): unknown {
  const tokens = parsePointer(path);
  if (tokens.length === 0)
    throw patchNotApplicable(`${op} operation does not apply: cannot remove the whole document`);
  const parent = parentOf(doc, tokens, path);
  const last = tokens[tokens.length - 1];
  if (Array.isArray(parent)) {
    const i = arrayIndex(last, parent.length, false, path);
    return parent.splice(i, 1)[0];
  }
  if (!Object.hasOwn(parent, last)) {
    throw patchNotApplicable(`${op} operation does not apply: doc is missing key: ${JSON.stringify(path)}`);
  }
  const old = parent[last];
  delete parent[last];
  return old;
}

function stringField(op: JsonObject, name: string, index: number): string {
  const v = op[name];
  if (typeof v !== "string") throw patchNotApplicable(`operation ${index} missing ${name} field`);
  return v;
}

function valueField(op: JsonObject, index: number): unknown {
  if (!Object.hasOwn(op, "value")) throw patchNotApplicable(`operation ${index} missing value field`);
  return op.value;
}

/** Checks the document shape: a JSON array of objects, at most 10000 of them. */
export function decodeJsonPatch(body: unknown): JsonObject[] {
  if (!Array.isArray(body)) {
    const got = isObject(body) ? "object" : body === null ? "null" : typeof body;
    throw badRequest(`json: cannot unmarshal ${got} into Go value of type jsonpatch.Patch`);
  }
  for (const op of body) {
    if (!isObject(op)) {
      throw badRequest("json: cannot unmarshal non-object into Go value of type jsonpatch.Operation");
    }
  }
  if (body.length > MAX_JSON_PATCH_OPERATIONS) {
    throw new StatusError(
      413,
      "RequestEntityTooLarge",
      `Request entity too large: The allowed maximum operations in a JSON patch is ${MAX_JSON_PATCH_OPERATIONS}, got ${body.length}`,
    );
  }
  return body as JsonObject[];
}

/** Applies an RFC 6902 patch to a copy of `doc`; `doc` is never modified. */
export function applyJsonPatch(doc: unknown, patch: unknown): unknown {
  const ops = decodeJsonPatch(patch);
  let out: unknown = clone(doc);
  let copied = 0;
  ops.forEach((op, i) => {
    const kind = op.op;
    switch (kind) {
      case "add":
        out = addValue(out, stringField(op, "path", i), clone(valueField(op, i)));
        break;
      case "remove":
        removeValue(out, stringField(op, "path", i), "remove");
        break;
      case "replace": {
        const path = stringField(op, "path", i);
        const value = clone(valueField(op, i));
        if (path === "") {
          out = value;
          break;
        }
        removeValue(out, path, "replace");
        out = addValue(out, path, value);
        break;
      }
      case "move": {
        const from = stringField(op, "from", i);
        const path = stringField(op, "path", i);
        if (path !== from && path.startsWith(`${from}/`)) {
          throw patchNotApplicable(
            `move operation does not apply: "from" ${from} is a prefix of "path" ${path}`,
          );
        }
        const value = removeValue(out, from, "move");
        out = addValue(out, path, value);
        break;
      }
      case "copy": {
        const from = stringField(op, "from", i);
        const got = getValue(out, from);
        if (!got.found)
          throw patchNotApplicable(`copy operation does not apply: doc is missing from path: ${from}`);
        copied += JSON.stringify(got.value)?.length ?? 0;
        if (copied > MAX_JSON_PATCH_COPY_BYTES)
          throw patchNotApplicable(
            `copy operation does not apply: copies would add ${copied} bytes, past the limit of ${MAX_JSON_PATCH_COPY_BYTES}`,
          );
        out = addValue(out, stringField(op, "path", i), clone(got.value));
        break;
      }
      case "test": {
        const path = stringField(op, "path", i);
        const expected = Object.hasOwn(op, "value") ? op.value : null;
        const got = getValue(out, path);
        // evanphx/json-patch: a missing path passes a test for null.
        const ok = got.found ? deepEqual(got.value, expected) : expected === null;
        if (!ok) throw patchNotApplicable(`testing value ${path} failed: test failed`);
        break;
      }
      default:
        throw patchNotApplicable(`Unexpected kind: ${String(kind)}`);
    }
  });
  return out;
}
