// Regenerates the message tables in api/protobuf/schema from upstream checkouts (not used at runtime).
//
//   npx tsx scripts/generate/protobuf-tables.ts <kubernetes/api git dir> <kubernetes/apimachinery git dir>
//
// It reads, at each repository's HEAD, generated.proto (field numbers and wire types) and the Go
// struct tags in the package's .go files (JSON name, omitempty, pointer, inline), joins them on
// the field number and writes one compact table per package (format: ./table.ts). Afterwards run
// `npx biome format --write api/protobuf/schema` and the tests in test/unit/protobuf.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { SCALAR_TYPES } from "../../api/protobuf/schema/table";

const [apiRepo, machineryRepo] = process.argv.slice(2);
if (!apiRepo || !machineryRepo) {
  console.error(
    "usage: npx tsx scripts/generate/protobuf-tables.ts <kubernetes/api git dir> <kubernetes/apimachinery git dir>",
  );
  process.exit(2);
}
const outDir = join(dirname(fileURLToPath(import.meta.url)), "../../api/protobuf/schema");
const git = (repo, ...args) => execFileSync("git", ["-C", repo, ...args], { maxBuffer: 1 << 28 }).toString();

// table prefix -> [repository, directory]; tables are written for the first group only,
// the second group is read so that references resolve (their JSON forms are special-cased).
const TABLES = {
  "meta.v1": [machineryRepo, "pkg/apis/meta/v1"],
  "core.v1": [apiRepo, "core/v1"],
  "apps.v1": [apiRepo, "apps/v1"],
  "batch.v1": [apiRepo, "batch/v1"],
  "rbac.v1": [apiRepo, "rbac/v1"],
  "authorization.v1": [apiRepo, "authorization/v1"],
  "authentication.v1": [apiRepo, "authentication/v1"],
  "policy.v1": [apiRepo, "policy/v1"],
  "coordination.v1": [apiRepo, "coordination/v1"],
  "autoscaling.v1": [apiRepo, "autoscaling/v1"],
  "autoscaling.v2": [apiRepo, "autoscaling/v2"],
  "networking.v1": [apiRepo, "networking/v1"],
  "scheduling.v1": [apiRepo, "scheduling/v1"],
  "certificates.v1": [apiRepo, "certificates/v1"],
  "discovery.v1": [apiRepo, "discovery/v1"],
  "events.v1": [apiRepo, "events/v1"],
  "storage.v1": [apiRepo, "storage/v1"],
};
// Messages decode.ts handles by name (custom JSON), so they get no table entry.
const SPECIAL = new Set([
  "meta.v1.Time",
  "meta.v1.MicroTime",
  "meta.v1.Duration",
  "meta.v1.FieldsV1",
  "meta.v1.Patch",
  "runtime.RawExtension",
  "runtime.Unknown",
  "runtime.TypeMeta",
  "intstr.IntOrString",
  "resource.Quantity",
  "resource.QuantityValue",
  "core.v1.List",
]);

function shortPackage(protoPackage) {
  const api = /^k8s\.io\.api\.(\w+)\.(\w+)$/.exec(protoPackage);
  if (api) return `${api[1]}.${api[2]}`;
  const known = {
    "k8s.io.apimachinery.pkg.apis.meta.v1": "meta.v1",
    "k8s.io.apimachinery.pkg.runtime": "runtime",
    "k8s.io.apimachinery.pkg.runtime.schema": "schema",
    "k8s.io.apimachinery.pkg.util.intstr": "intstr",
    "k8s.io.apimachinery.pkg.api.resource": "resource",
  };
  return known[protoPackage] ?? `?${protoPackage}`;
}

function qualifyType(type, pkg) {
  if (SCALAR_TYPES.has(type)) return type;
  if (type.startsWith(".")) {
    const parts = type.slice(1).split(".");
    const name = parts.pop();
    return `${shortPackage(parts.join("."))}.${name}`;
  }
  return `${pkg}.${type}`;
}

function parseProto(text, pkg) {
  const messages = new Map();
  let current = null;
  for (const raw of text.split("\n")) {
    const line = raw.replace(/\/\/.*$/, "").trim();
    if (!line) continue;
    let m = /^message (\w+) \{(\})?$/.exec(line);
    if (m) {
      messages.set(m[1], []);
      current = m[2] ? null : m[1];
      continue;
    }
    if (line === "}") {
      current = null;
      continue;
    }
    if (!current) continue;
    m = /^(optional|repeated) ([\w.]+) (\w+) = (\d+)(?: \[.*\])?;$/.exec(line);
    if (m) {
      messages.get(current).push({ label: m[1], type: qualifyType(m[2], pkg), name: m[3], number: +m[4] });
      continue;
    }
    m = /^map<(\w+), ([\w.]+)> (\w+) = (\d+);$/.exec(line);
    if (m) {
      messages
        .get(current)
        .push({ label: "map", key: m[1], type: qualifyType(m[2], pkg), name: m[3], number: +m[4] });
      continue;
    }
    if (!/^(option|reserved)\b/.test(line)) throw new Error(`unexpected line in ${pkg}.${current}: ${line}`);
  }
  return messages;
}

/** Go structs (field tags) and named slice types of one package directory. */
function parseGo(repo, dir) {
  const files = git(repo, "ls-tree", "--name-only", "HEAD", `${dir}/`)
    .trim()
    .split("\n")
    .filter((f) => f.endsWith(".go") && !f.endsWith("_test.go") && !/generated|zz_/.test(f));
  const structs = new Map();
  const sliceTypes = new Set();
  for (const file of files) {
    const lines = git(repo, "show", `HEAD:${file}`).split("\n");
    for (let i = 0; i < lines.length; i++) {
      const head = /^type (\w+) struct \{/.exec(lines[i]);
      if (head) {
        const fields = [];
        for (i++; i < lines.length && !/^\}/.test(lines[i]); i++) {
          const f = /^\s+([^`/]*?)\s*`([^`]*)`/.exec(lines[i]);
          if (!f) continue;
          const tokens = f[1].trim().split(/\s+/);
          const pb = /protobuf:"\w+,(\d+),/.exec(f[2]);
          const json = /json:"([^"]*)"/.exec(f[2]);
          if (!pb) continue;
          fields.push({ goType: tokens[tokens.length - 1], number: +pb[1], json: json ? json[1] : "" });
        }
        structs.set(head[1], fields);
        continue;
      }
      const slice = /^type (\w+) \[\][\w.]+\s*$/.exec(lines[i]);
      if (slice) sliceTypes.add(slice[1]);
    }
  }
  return { structs, sliceTypes };
}

const parsed = new Map();
for (const [pkg, [repo, dir]] of Object.entries(TABLES)) {
  parsed.set(pkg, {
    proto: parseProto(git(repo, "show", `HEAD:${dir}/generated.proto`), pkg),
    go: parseGo(repo, dir),
  });
}
const known = (type) => {
  if (SCALAR_TYPES.has(type) || SPECIAL.has(type)) return true;
  const dot = type.lastIndexOf(".");
  return parsed.get(type.slice(0, dot))?.proto.has(type.slice(dot + 1)) ?? false;
};
const camel = (pkg) => pkg.replace(/\.(\w)/g, (_, c) => c.toUpperCase());

for (const [pkg, { proto, go }] of parsed) {
  const local = (type) =>
    type.startsWith(`${pkg}.`) && !type.slice(pkg.length + 1).includes(".")
      ? type.slice(pkg.length + 1)
      : type;
  const entries = [];
  for (const [name, fields] of proto) {
    if (SPECIAL.has(`${pkg}.${name}`)) continue;
    const struct = go.structs.get(name);
    if (!struct) {
      if (go.sliceTypes.has(name) && fields.length === 1 && fields[0].number === 1) {
        entries.push(`  ${name}: "list ${local(fields[0].type)}",`);
      } else console.error(`skipped ${pkg}.${name}: no Go struct`);
      continue;
    }
    const specs = [];
    for (const f of fields) {
      const goField = struct.find((g) => g.number === f.number);
      if (!goField) throw new Error(`${pkg}.${name}.${f.name}: no Go field with number ${f.number}`);
      if (!known(f.type)) {
        console.error(`dropped ${pkg}.${name}.${f.name}: type ${f.type} is outside the tables`);
        continue;
      }
      const [jsonName, ...opts] = goField.json.split(",");
      if (jsonName === "-") continue;
      let flags = "";
      if (!jsonName || opts.includes("inline")) flags += "i";
      if (opts.includes("omitempty")) flags += "o";
      if (goField.goType.startsWith("*")) flags += "p";
      if (f.label === "repeated") flags += "r";
      const type = f.label === "map" ? `map<${f.key},${local(f.type)}>` : local(f.type);
      specs.push(`${f.number} ${flags.includes("i") ? "." : jsonName} ${type}${flags ? ` ${flags}` : ""}`);
    }
    entries.push(`  ${name}: ${JSON.stringify(specs.join("; "))},`);
  }
  const file = `// ${pkg.replace(".", "/")} messages: field number, JSON name ("." = inlined), type, flags
// (o = omitempty, p = Go pointer, r = repeated, i = inlined into the parent JSON object).
// Generated by scripts/generate/protobuf-tables.ts from upstream's generated.proto and Go struct tags; format: ./table.ts.
import type { MessageTable } from "../../api/protobuf/schema/table";

export const ${camel(pkg)}: MessageTable = {
${entries.join("\n")}
};
`;
  writeFileSync(join(outDir, `${pkg.replace(".", "-")}.ts`), file);
}
