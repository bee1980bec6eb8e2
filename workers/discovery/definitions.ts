// The generated OpenAPI definitions (Swagger 2.0 shape, refs as
// "#/definitions/<id>") and lookups over them: by GVK, reference closure.
// Regenerate with: npm run generate (scripts/generate/openapi-definitions.ts)

import generated from "./generated/definitions.json";
import { OWN_DEFINITIONS } from "./own-definitions";

export type Schema = Record<string, unknown> & {
  description?: string;
  type?: string;
  format?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
  required?: string[];
  $ref?: string;
  allOf?: Schema[];
};

export interface GVK {
  group: string;
  version: string;
  kind: string;
}

export const DEFINITIONS: Record<string, Schema> = {
  ...(generated as unknown as Record<string, Schema>),
  ...OWN_DEFINITIONS,
};

export const META = "io.k8s.apimachinery.pkg.apis.meta.v1";
export const V2_REF = "#/definitions/";

let gvkIndex: Map<string, string> | undefined;

const gvkKey = (g: GVK) => `${g.group}/${g.version}/${g.kind}`;

/** The definition id that carries x-kubernetes-group-version-kind for gvk. */
export function definitionIdFor(gvk: GVK): string | undefined {
  if (!gvkIndex) {
    gvkIndex = new Map();
    for (const [id, def] of Object.entries(DEFINITIONS)) {
      for (const g of (def["x-kubernetes-group-version-kind"] as GVK[] | undefined) ?? [])
        gvkIndex.set(gvkKey(g), id);
    }
  }
  return gvkIndex.get(gvkKey(gvk));
}

/** The id a "$ref" names (any prefix), or undefined. */
export function refId(ref: string | undefined): string | undefined {
  if (!ref) return undefined;
  const i = ref.lastIndexOf("/");
  return i >= 0 ? ref.slice(i + 1) : ref;
}

/**
 * A schema with its $ref (and a leading allOf) followed, at most 8 steps, and the id of the
 * definition it ended in, if it went through one.
 */
export function resolveSchema(s: Schema | undefined): { schema?: Schema; id?: string } {
  let cur = s;
  let id: string | undefined;
  for (let i = 0; cur && i < 8; i++) {
    if (cur.$ref) {
      id = refId(cur.$ref);
      cur = DEFINITIONS[id as string];
    } else if (cur.allOf?.length) cur = cur.allOf[0];
    else break;
  }
  return { schema: cur, id };
}

function collectRefs(s: unknown, out: Set<string>): void {
  if (!s || typeof s !== "object") return;
  if (Array.isArray(s)) {
    for (const x of s) collectRefs(x, out);
    return;
  }
  for (const [k, v] of Object.entries(s)) {
    if (k === "$ref" && typeof v === "string") {
      const id = refId(v);
      if (id) out.add(id);
    } else collectRefs(v, out);
  }
}

/** The ids reachable from roots (roots included), sorted. Unknown ids are skipped. */
export function closure(roots: Iterable<string>): string[] {
  const seen = new Set<string>();
  const queue = [...roots];
  while (queue.length) {
    const id = queue.pop() as string;
    if (seen.has(id) || !DEFINITIONS[id]) continue;
    seen.add(id);
    const refs = new Set<string>();
    collectRefs(DEFINITIONS[id], refs);
    for (const r of refs) if (!seen.has(r)) queue.push(r);
  }
  return [...seen].sort();
}

/** Deep copy of a schema with every "$ref" rewritten by fn. */
export function mapRefs(s: Schema, fn: (id: string) => string): Schema {
  const walk = (x: unknown): unknown => {
    if (Array.isArray(x)) return x.map(walk);
    if (!x || typeof x !== "object") return x;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(x)) {
      out[k] = k === "$ref" && typeof v === "string" ? fn(refId(v) as string) : walk(v);
    }
    return out;
  };
  return walk(s) as Schema;
}
