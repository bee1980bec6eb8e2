// Server-side apply's schema (api/patch/patch-meta.ts) and the OpenAPI definitions edgeplane
// publishes (workers/discovery/generated/definitions.json, from scripts/generate/patch-metadata.ts)
// are kept by hand in two places: they must say the same of every field of every served kind,
// as upstream's one source (the Go tags +listType, +listMapKey, +mapType, +structType) does.
import { describe, expect, it } from "vitest";
import { type FieldDef, fieldDef, KINDS, type Schema, schemaOf } from "../../../api/patch/patch-meta";
import { RESOURCES } from "../../../api/strategies";
import definitions from "../../../workers/discovery/generated/definitions.json";

type Def = {
  properties?: Record<string, Prop>;
  "x-kubernetes-map-type"?: string;
  "x-kubernetes-group-version-kind"?: { group: string; version: string; kind: string }[];
};
type Prop = {
  type?: string;
  $ref?: string;
  allOf?: { $ref: string }[];
  items?: Prop;
  "x-kubernetes-list-type"?: string;
  "x-kubernetes-list-map-keys"?: string[];
  "x-kubernetes-map-type"?: string;
};
const DEFS = definitions as unknown as Record<string, Def>;

/** Where the two may differ, and why. */
const KNOWN: Record<string, string> = {
  // a RawExtension: an object without properties in OpenAPI; applied whole here
  "ControllerRevision.data": "RawExtension",
};

const refOf = (p: Prop | undefined) => (p?.$ref ?? p?.allOf?.[0]?.$ref ?? "").replace("#/definitions/", "");

function definitionOf(kind: string): string | undefined {
  const def = RESOURCES.find((r) => r.kind === kind && !r.storedIn);
  if (!def) return undefined;
  return Object.keys(DEFS).find((id) =>
    DEFS[id]["x-kubernetes-group-version-kind"]?.some(
      (g) => g.kind === kind && g.group === def.group && g.version === def.version,
    ),
  );
}

function differences(id: string, schema: Schema, at: string, out: string[], depth = 0): void {
  if (depth > 16) return;
  for (const [name, p] of Object.entries(DEFS[id]?.properties ?? {})) {
    const path = `${at}.${name}`;
    if (KNOWN[path]) continue;
    const mine: FieldDef | undefined = fieldDef(schema, name);
    if (p.type === "array") {
      const theirs = p["x-kubernetes-list-type"] ?? "atomic";
      const keys = p["x-kubernetes-list-map-keys"];
      const ours = mine?.list ?? "atomic";
      if (theirs !== ours || (theirs === "map" && JSON.stringify(keys) !== JSON.stringify(mine?.keys)))
        out.push(`${path}: OpenAPI ${theirs} ${keys ?? ""}, apply ${ours} ${mine?.keys ?? ""}`);
      const item = refOf(p.items);
      if (theirs === "map" && item) differences(item, schemaOf(mine), `${path}[]`, out, depth + 1);
      continue;
    }
    const ref = refOf(p);
    if (!ref && p.type !== "object") continue;
    const atomic =
      p["x-kubernetes-map-type"] === "atomic" || DEFS[ref]?.["x-kubernetes-map-type"] === "atomic";
    if (atomic !== (mine?.atomic === true))
      out.push(
        `${path}: OpenAPI ${atomic ? "atomic" : "granular"}, apply ${mine?.atomic ? "atomic" : "granular"}`,
      );
    if (ref && !atomic) differences(ref, schemaOf(mine), path, out, depth + 1);
  }
}

describe("server-side apply's schema and the published OpenAPI", () => {
  it("agree on every list type, list key and atomic map or struct of every served kind", () => {
    const out: string[] = [];
    for (const kind of Object.keys(KINDS)) {
      const id = definitionOf(kind);
      expect(id, kind).toBeDefined();
      differences(id as string, KINDS[kind], kind, out);
    }
    expect(out).toEqual([]);
  });
});
