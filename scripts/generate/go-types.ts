// Builds workers/discovery/generated/go-types.json: the Go type of each struct field whose
// type the OpenAPI definitions do not name (a named string such as v1.RestartPolicy, a named
// map such as v1.ResourceList, types.UID), so that a value of the wrong JSON type is reported
// with the type upstream's decoder names (workers/discovery/decode-types.ts).
//
//   npx tsx scripts/generate/go-types.ts <kubernetes/api checkout> <kubernetes/apimachinery checkout>
//
// Only the field declarations of the API packages' types.go are read (the facts: field,
// JSON name, Go type); fields whose type the definitions already give are left out.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { fieldGoType } from "../../workers/discovery/decode-types";
import { DEFINITIONS } from "../../workers/discovery/definitions";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const OUT = join(root, "workers/discovery/generated/go-types.json");
const [apiRoot, machineryRoot] = process.argv.slice(2);
if (!apiRoot || !machineryRoot) {
  console.error("usage: go-types.ts <kubernetes/api dir> <kubernetes/apimachinery dir>");
  process.exit(2);
}

/** Each package read: its types.go and the definition id prefix of its types. */
const PACKAGES = [
  ...[
    "core/v1",
    "apps/v1",
    "coordination/v1",
    "discovery/v1",
    "events/v1",
    "rbac/v1",
    "policy/v1",
    "autoscaling/v1",
    "authentication/v1",
    "authorization/v1",
    "admissionregistration/v1",
  ].map((p) => ({ file: join(apiRoot, p, "types.go"), prefix: `io.k8s.api.${p.replace("/", ".")}` })),
  { file: join(machineryRoot, "pkg/apis/meta/v1/types.go"), prefix: "io.k8s.apimachinery.pkg.apis.meta.v1" },
];

/** Imported package aliases, as the files name them, to the Go package names reflect prints. */
const ALIASES: Record<string, string> = {
  metav1: "v1",
  resource: "resource",
  intstr: "intstr",
  types: "types",
  runtime: "runtime",
  corev1: "v1",
  v1: "v1",
};

const BUILTIN = new Set(["string", "bool", "int", "int32", "int64", "float64", "uint8", "byte", "uint64"]);

/** A field's Go type expression as reflect's String() prints it (pointers dereferenced). */
function printed(expr: string, pkg: string): string {
  const t = expr.replace(/^\*/, "");
  if (t === "[]byte") return "[]uint8";
  if (t.startsWith("[]")) return `[]${printed(t.slice(2), pkg)}`;
  const map = /^map\[([^\]]+)\](.+)$/.exec(t);
  if (map) return `map[${printed(map[1], pkg)}]${printed(map[2], pkg)}`;
  if (BUILTIN.has(t)) return t === "byte" ? "uint8" : t;
  const dot = t.indexOf(".");
  if (dot > 0) return `${ALIASES[t.slice(0, dot)] ?? t.slice(0, dot)}.${t.slice(dot + 1)}`;
  return `${pkg}.${t}`;
}

const table: Record<string, Record<string, string>> = {};
for (const { file, prefix } of PACKAGES) {
  if (!existsSync(file)) throw new Error(`missing ${file}`);
  const pkg = prefix.split(".").at(-1) as string;
  let struct: string | undefined;
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const open = /^type (\w+) struct \{/.exec(line);
    if (open) {
      struct = open[1];
      continue;
    }
    if (line === "}") {
      struct = undefined;
      continue;
    }
    if (!struct) continue;
    const m = /^\t(\w+)\s+(\S+)\s+`json:"([^",]*)/.exec(line);
    if (!m?.[3] || m[3] === "-") continue;
    const id = `${prefix}.${struct}`;
    const schema = DEFINITIONS[id]?.properties?.[m[3]];
    if (!schema) continue;
    const go = printed(m[2], pkg);
    if (go === fieldGoType(schema)) continue;
    (table[id] ??= {})[m[3]] = go;
  }
}
const sorted = Object.fromEntries(
  Object.keys(table)
    .sort()
    .map((id) => [id, Object.fromEntries(Object.entries(table[id]).sort(([a], [b]) => (a < b ? -1 : 1)))]),
);
writeFileSync(OUT, `${JSON.stringify(sorted, null, 2)}\n`);
const fields = Object.values(sorted).reduce((n, t) => n + Object.keys(t).length, 0);
console.log(`wrote ${OUT}: ${fields} fields of ${Object.keys(sorted).length} types`);
