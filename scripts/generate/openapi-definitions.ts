// Builds workers/discovery/generated/definitions.json: Swagger 2.0 style
// definitions (descriptions, types, formats, required, enums,
// x-kubernetes-group-version-kind, patch and list extensions) for the kinds
// edgeplane serves and everything they reference.
//
// Source: the .d.ts files of kubernetes-models (types and doc comments) and
// its compiled validators (probed to tell integers and their formats apart),
// plus the hand-kept patch metadata in ./patch-metadata.ts.
//
// Run: npm run generate

import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import ts from "typescript";
import { RESOURCES } from "../../api/strategies";
import { ATOMIC_STRUCTS, FIELD_META } from "./patch-metadata";

type Schema = Record<string, unknown>;

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../..");
const require = createRequire(join(root, "package.json"));
const modelsDir = dirname(require.resolve("kubernetes-models/package.json"));
const machineryDir = dirname(require.resolve("@kubernetes-models/apimachinery/package.json"));
const OUT = join(root, "workers/discovery/generated/definitions.json");

/**
 * The OpenAPI definition id of a built-in kind, as upstream names its Go package:
 * io.k8s.api.<first label of the group, "core" for the legacy group>.<version>.<Kind>.
 */
function definitionId(group: string, version: string, kind: string): string {
  if (group === "apiextensions.k8s.io")
    return `io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.${version}.${kind}`;
  if (group === "apiregistration.k8s.io")
    return `io.k8s.kube-aggregator.pkg.apis.apiregistration.${version}.${kind}`;
  return `io.k8s.api.${group === "" ? "core" : group.split(".")[0]}.${version}.${kind}`;
}

/**
 * Root kinds: every kind RESOURCES serves (api/strategies/index.ts), its list when it can be
 * listed, the bodies its subresources take, and the meta kinds every API uses.
 */
const ROOTS = [
  ...new Set([
    // (edgeplane's own kinds are written by hand: workers/discovery/own-definitions.ts)
    ...RESOURCES.filter((def) => !def.group.endsWith(".edgeplane.dev")).flatMap((def) => [
      definitionId(def.group, def.version, def.kind),
      ...(def.verbs.includes("list") ? [definitionId(def.group, def.version, def.listKind)] : []),
      // connect subresources' *Options kinds are query parameters, not bodies (as upstream)
      ...Object.values(def.subresources ?? {})
        .filter((sub) => !sub.kind.endsWith("Options"))
        .map((sub) => definitionId(sub.group ?? def.group, sub.version ?? def.version, sub.kind)),
    ]),
    "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
  ]),
];

const MACHINERY_PREFIXES: [string, string][] = [
  ["IoK8sApimachineryPkgApisMetaV1", "io.k8s.apimachinery.pkg.apis.meta.v1"],
  ["IoK8sApimachineryPkgApiResource", "io.k8s.apimachinery.pkg.api.resource"],
  ["IoK8sApimachineryPkgUtilIntstr", "io.k8s.apimachinery.pkg.util.intstr"],
  ["IoK8sApimachineryPkgRuntime", "io.k8s.apimachinery.pkg.runtime"],
  ["IoK8sApimachineryPkgVersion", "io.k8s.apimachinery.pkg.version"],
  [
    "IoK8sApiextensionsApiserverPkgApisApiextensionsV1",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1",
  ],
  ["IoK8sKubeAggregatorPkgApisApiregistrationV1", "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1"],
];

/** IoK8sApiCoreV1Pod -> io.k8s.api.core.v1.Pod */
function idFromPascal(name: string): string | undefined {
  for (const [p, dotted] of MACHINERY_PREFIXES) {
    if (name.startsWith(p)) return `${dotted}.${name.slice(p.length)}`;
  }
  const m = /^IoK8sApi([A-Z][a-z]+)(V\d+(?:(?:alpha|beta)\d+)?)([A-Z].*)$/.exec(name);
  if (!m) return undefined;
  return `io.k8s.api.${m[1].toLowerCase()}.${m[2].toLowerCase()}.${m[3]}`;
}

/** Special scalar types: upstream's OpenAPI shape for each. */
const SCALARS: Record<string, Schema> = {
  "io.k8s.apimachinery.pkg.api.resource.Quantity": {
    description:
      "Quantity is a fixed-point number with an optional suffix: a binary SI (Ki, Mi, Gi, Ti, Pi, Ei), decimal SI (n, u, m, k, M, G, T, P, E) or decimal exponent (e.g. 1e3) multiplier, such as 100m, 1.5Gi or 2. It is serialized as a string.",
    type: "string",
  },
  "io.k8s.apimachinery.pkg.util.intstr.IntOrString": { type: "string", format: "int-or-string" },
  "io.k8s.apimachinery.pkg.apis.meta.v1.Time": { type: "string", format: "date-time" },
  "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": { type: "string", format: "date-time" },
  "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": { type: "object" },
  "io.k8s.apimachinery.pkg.runtime.RawExtension": { type: "object" },
  "io.k8s.apimachinery.pkg.apis.meta.v1.Patch": { type: "object" },
  // any JSON value, or one of two shapes: upstream gives them no type
  "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON": {
    description:
      "JSON represents any valid JSON value. These types are supported: bool, int64, float64, string, []interface{}, map[string]interface{} and nil.",
  },
  "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray": {
    description:
      "JSONSchemaPropsOrArray represents a value that can either be a JSONSchemaProps or an array of JSONSchemaProps. Mainly here for serialization purposes.",
  },
  "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool": {
    description:
      "JSONSchemaPropsOrBool represents JSONSchemaProps or a boolean value. Defaults to true for the boolean property.",
  },
  "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray": {
    description: "JSONSchemaPropsOrStringArray represents a JSONSchemaProps or a string array.",
  },
};

interface Found {
  node: ts.InterfaceDeclaration | ts.TypeAliasDeclaration;
  source: ts.SourceFile;
  schemaModule: string;
}

function walk(dir: string, out: string[]): void {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (name === "node_modules" || name === "_schemas") continue;
    if (statSync(p).isDirectory()) walk(p, out);
    else if (name.endsWith(".d.ts") && name !== "index.d.ts") out.push(p);
  }
}

function indexDeclarations(): Map<string, Found> {
  const files: string[] = [];
  walk(modelsDir, files);
  walk(machineryDir, files);
  const found = new Map<string, Found>();
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
    const locals = new Map<string, ts.InterfaceDeclaration | ts.TypeAliasDeclaration>();
    for (const st of source.statements) {
      if (ts.isInterfaceDeclaration(st) || ts.isTypeAliasDeclaration(st)) locals.set(st.name.text, st);
    }
    for (const st of source.statements) {
      if (!ts.isExportDeclaration(st) || !st.exportClause || !ts.isNamedExports(st.exportClause)) continue;
      for (const el of st.exportClause.elements) {
        const exported = el.name.text;
        const local = el.propertyName?.text;
        if (!local || !exported.startsWith("IIoK8s")) continue;
        const decl = locals.get(local);
        const id = idFromPascal(exported.slice(1));
        if (!decl || !id) continue;
        const base = file.startsWith(machineryDir) ? machineryDir : modelsDir;
        found.set(id, {
          node: decl,
          source,
          schemaModule: join(base, "_schemas", `${exported.slice(1)}.mjs`),
        });
      }
    }
  }
  return found;
}

function docOf(node: ts.Node, source: ts.SourceFile): string | undefined {
  const ranges = ts.getLeadingCommentRanges(source.text, node.getFullStart()) ?? [];
  const last = ranges.filter((r) => source.text.startsWith("/**", r.pos)).pop();
  if (!last) return undefined;
  const raw = source.text.slice(last.pos + 3, last.end - 2);
  // JSDoc tags (kubernetes-models marks deprecated types "@deprecated") are not upstream's text
  const lines = raw
    .split("\n")
    .map((l) => l.replace(/^\s*\* ?/, ""))
    .filter((l) => !/^@[a-z]+\b/.test(l));
  const text = lines.join("\n").trim();
  return text || undefined;
}

type Validator = ((data: unknown) => boolean) & {
  errors?: { instancePath: string; keyword: string; params: Record<string, unknown> }[] | null;
};
const validators = new Map<string, Validator | null>();

async function validatorFor(f: Found): Promise<Validator | null> {
  if (validators.has(f.schemaModule)) return validators.get(f.schemaModule) ?? null;
  let v: Validator | null = null;
  try {
    v = ((await import(pathToFileURL(f.schemaModule).href)) as { validate: Validator }).validate;
  } catch {
    v = null;
  }
  validators.set(f.schemaModule, v);
  return v;
}

function probe(
  v: Validator | null,
  path: string[],
  value: unknown,
  keyword: string,
): Record<string, unknown> | undefined {
  if (!v) return undefined;
  let data: unknown = value;
  for (let i = path.length - 1; i >= 0; i--) data = { [path[i]]: data };
  v(data);
  const at = `/${path.join("/")}`;
  return (v.errors ?? []).find((e) => e.instancePath === at && e.keyword === keyword)?.params;
}

async function numberSchema(v: Validator | null, path: string[]): Promise<Schema> {
  const t = probe(v, path, 1.5, "type");
  if (t?.type === "integer") {
    return { type: "integer", format: probe(v, path, 3_000_000_000, "format") ? "int32" : "int64" };
  }
  return { type: "number", format: "double" };
}

async function stringSchema(v: Validator | null, path: string[]): Promise<Schema> {
  return probe(v, path, "!not base64!", "format")?.format === "byte"
    ? { type: "string", format: "byte" }
    : { type: "string" };
}

const refs = new Set<string>();

async function typeToSchema(t: ts.TypeNode, v: Validator | null, path: string[]): Promise<Schema> {
  if (t.kind === ts.SyntaxKind.StringKeyword) return stringSchema(v, path);
  if (t.kind === ts.SyntaxKind.NumberKeyword) return numberSchema(v, path);
  if (t.kind === ts.SyntaxKind.BooleanKeyword) return { type: "boolean" };
  if (t.kind === ts.SyntaxKind.AnyKeyword || t.kind === ts.SyntaxKind.UnknownKeyword)
    return { type: "object" };
  if (ts.isLiteralTypeNode(t) && ts.isStringLiteral(t.literal)) return { type: "string" };
  if (ts.isUnionTypeNode(t)) {
    const lits = t.types.filter(
      (x): x is ts.LiteralTypeNode => ts.isLiteralTypeNode(x) && ts.isStringLiteral(x.literal),
    );
    if (lits.length === t.types.length) {
      return { type: "string", enum: lits.map((l) => (l.literal as ts.StringLiteral).text) };
    }
    return { type: "string" };
  }
  if (ts.isArrayTypeNode(t)) return { type: "array", items: await typeToSchema(t.elementType, null, []) };
  if (ts.isTypeReferenceNode(t)) {
    const name = t.typeName.getText();
    if (name === "Array" && t.typeArguments?.length === 1) {
      return { type: "array", items: await typeToSchema(t.typeArguments[0], null, []) };
    }
    if (name === "Date") return { type: "string", format: "date-time" };
    const id = name.startsWith("IIoK8s") ? idFromPascal(name.slice(1)) : undefined;
    if (id) {
      refs.add(id);
      return { $ref: `#/definitions/${id}` };
    }
    return { type: "object" };
  }
  if (ts.isTypeLiteralNode(t)) {
    const index = t.members.find(ts.isIndexSignatureDeclaration);
    if (index?.type) {
      const inner = await typeToSchema(index.type, v, [...path, "k"]);
      return { type: "object", additionalProperties: inner };
    }
    return { type: "object" };
  }
  return { type: "object" };
}

async function buildDefinition(id: string, f: Found): Promise<Schema> {
  const description = docOf(f.node, f.source);
  if (SCALARS[id]) return { ...(description ? { description } : {}), ...SCALARS[id] };
  if (ts.isTypeAliasDeclaration(f.node)) {
    return { ...(description ? { description } : {}), ...(await typeToSchema(f.node.type, null, [])) };
  }
  const v = await validatorFor(f);
  const properties: Record<string, Schema> = {};
  const required: string[] = [];
  let apiVersion: string | undefined;
  let kind: string | undefined;
  const members = [...f.node.members]
    .filter(ts.isPropertySignature)
    .sort((a, b) => a.name.getText().replace(/"/g, "").localeCompare(b.name.getText().replace(/"/g, "")));
  for (const m of members) {
    const name = m.name.getText().replace(/^"|"$/g, "");
    if (!m.type) continue;
    if (ts.isLiteralTypeNode(m.type) && ts.isStringLiteral(m.type.literal)) {
      if (name === "apiVersion") apiVersion = m.type.literal.text;
      if (name === "kind") kind = m.type.literal.text;
    }
    const schema: Schema = {};
    const doc = docOf(m, f.source);
    if (doc) schema.description = doc;
    Object.assign(schema, await typeToSchema(m.type, v, [name]));
    const meta = FIELD_META[`${id}.${name}`];
    if (meta?.listType) schema["x-kubernetes-list-type"] = meta.listType;
    if (meta?.mapKeys) schema["x-kubernetes-list-map-keys"] = meta.mapKeys;
    if (meta?.mapType) schema["x-kubernetes-map-type"] = meta.mapType;
    if (meta?.mergeKey) schema["x-kubernetes-patch-merge-key"] = meta.mergeKey;
    if (meta?.strategy) schema["x-kubernetes-patch-strategy"] = meta.strategy;
    const typeMeta = ts.isLiteralTypeNode(m.type) && (name === "apiVersion" || name === "kind");
    if (typeMeta) {
      // Upstream documents these two with the generic TypeMeta text.
      schema.type = "string";
      delete schema.enum;
    }
    properties[name] = schema;
    if (!m.questionToken && name !== "apiVersion" && name !== "kind") required.push(name);
  }
  const def: Schema = {};
  if (description) def.description = description;
  def.type = "object";
  if (required.length) def.required = required;
  def.properties = properties;
  if (apiVersion && kind) {
    const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
    def["x-kubernetes-group-version-kind"] = [{ group, kind, version }];
  }
  if (ATOMIC_STRUCTS.has(id)) def["x-kubernetes-map-type"] = "atomic";
  return def;
}

const TYPEMETA_DOCS = {
  apiVersion:
    "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
  kind: "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
};

async function main(): Promise<void> {
  const decls = indexDeclarations();
  const out: Record<string, Schema> = {};
  const queue = [...ROOTS];
  while (queue.length) {
    const id = queue.shift() as string;
    if (out[id]) continue;
    const f = decls.get(id);
    if (!f) {
      if (SCALARS[id]) {
        out[id] = SCALARS[id];
        continue;
      }
      throw new Error(`no declaration for ${id}`);
    }
    refs.clear();
    const def = await buildDefinition(id, f);
    const props = def.properties as Record<string, Schema> | undefined;
    for (const k of ["apiVersion", "kind"] as const) {
      if (props?.[k] && !props[k].description) props[k].description = TYPEMETA_DOCS[k];
    }
    out[id] = def;
    for (const r of refs) if (!out[r]) queue.push(r);
  }
  // Upstream lists DeleteOptions and WatchEvent under every group-version.
  const sorted = Object.fromEntries(
    Object.keys(out)
      .sort()
      .map((k) => [k, out[k]]),
  );
  writeFileSync(OUT, `${JSON.stringify(sorted, null, 2)}\n`);
  // Laid out as the project's formatter wants it, so `biome check .` passes on the output.
  execFileSync(join(root, "node_modules/.bin/biome"), ["format", "--write", OUT], { stdio: "ignore" });
  console.log(`wrote ${Object.keys(sorted).length} definitions, ${statSync(OUT).size} bytes to ${OUT}`);
}

await main();
