// Layers run one way: agent and workers -> durable-objects -> api (and the local engine, which
// starts them all, above everything). An import that runs back up fails here, naming the file,
// the line and the layer it reached.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** What each layer may import, besides itself and packages. */
const MAY_IMPORT: Record<string, string[]> = {
  api: [],
  "durable-objects": ["api", "migrations"],
  workers: ["durable-objects", "api", "migrations"],
  agent: ["api"],
  "local-engine": ["agent", "workers", "durable-objects", "api", "migrations"],
};
const LAYERS = Object.keys(MAY_IMPORT);

const SPEC = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)["'](\.{1,2}\/[^"']+)["']/g;

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name.startsWith(".")) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sources(p));
    else if (/\.(ts|mts|mjs|js)$/.test(name) && !name.endsWith(".d.ts")) out.push(p);
  }
  return out;
}

/** Every relative import of `file` that leaves its layer for one it may not use. */
export function upwardImports(root: string, file: string, text: string): string[] {
  const layer = relative(root, file).split("/")[0];
  const allowed = MAY_IMPORT[layer];
  if (!allowed) return [];
  const found: string[] = [];
  const lines = text.split("\n");
  lines.forEach((line, i) => {
    for (const m of line.matchAll(SPEC)) {
      const target = relative(root, resolve(file, "..", m[1])).split("/")[0];
      if (target === layer || allowed.includes(target)) continue;
      found.push(`${relative(root, file)}:${i + 1} imports ${m[1]} (layer ${target})`);
    }
  });
  return found;
}

describe("layers", () => {
  it("no file imports from a layer above its own", () => {
    const violations: string[] = [];
    for (const layer of LAYERS) {
      let files: string[] = [];
      try {
        files = sources(join(ROOT, layer));
      } catch {
        continue; // a layer not (yet) in the tree
      }
      for (const f of files) violations.push(...upwardImports(ROOT, f, readFileSync(f, "utf8")));
    }
    expect(violations).toEqual([]);
  });

  it("the check sees static, type-only, re-exported and dynamic imports that run up", () => {
    const f = join(ROOT, "durable-objects/store/x.ts");
    const text = [
      'import { app } from "../../workers/app";',
      'import type { Env } from "../../workers/env";',
      'export { x } from "../../agent/edgelet/config";',
      'const m = await import("../../local-engine/start");',
      'import { ok } from "../../api/errors";',
      'import { same } from "./shard";',
    ].join("\n");
    expect(upwardImports(ROOT, f, text)).toEqual([
      "durable-objects/store/x.ts:1 imports ../../workers/app (layer workers)",
      "durable-objects/store/x.ts:2 imports ../../workers/env (layer workers)",
      "durable-objects/store/x.ts:3 imports ../../agent/edgelet/config (layer agent)",
      "durable-objects/store/x.ts:4 imports ../../local-engine/start (layer local-engine)",
    ]);
    const agent = join(ROOT, "agent/tunnel/t.ts");
    expect(
      upwardImports(ROOT, agent, 'import { f } from "../../durable-objects/node-tunnel/x";'),
    ).toHaveLength(1);
  });
});
