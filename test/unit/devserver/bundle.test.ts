// The Worker bundle is built once per state of its sources: a second start with the same
// sources reuses it (with the manifest the engine runs it from), a changed source builds anew.
import {
  appendFileSync,
  cpSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { MANIFEST, workerBundle } from "../../../local-engine/bundle";

const REPO = join(__dirname, "../../..");
const root = mkdtempSync(join(tmpdir(), "edgeplane-bundle-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

for (const name of [
  "api",
  "workers",
  "durable-objects",
  "migrations",
  "wrangler.toml",
  "package.json",
  "package-lock.json",
  "tsconfig.json",
])
  cpSync(join(REPO, name), join(root, name), { recursive: true });
symlinkSync(join(REPO, "node_modules"), join(root, "node_modules"));

describe("worker bundle cache", () => {
  it("reuses the bundle while the sources are the same and rebuilds when one changes", async () => {
    const first = await workerBundle(root);
    const manifest = JSON.parse(readFileSync(join(first.bundleDir, MANIFEST), "utf8"));
    expect(manifest.modules[0]).toEqual({ type: "ESModule", path: "index.js" });
    // every migration travels as a Text module beside the code
    const migrations = readdirSync(join(root, "migrations")).filter((f) => f.endsWith(".sql"));
    const texts = manifest.modules.slice(1) as { type: string; path: string }[];
    expect(texts.map((m) => m.type)).toEqual(migrations.map(() => "Text"));
    for (const m of texts) expect(m.path).toMatch(/\.sql$/);
    expect(manifest.workerOptions.durableObjects.STORE).toEqual({ className: "StoreShard", useSQLite: true });
    const built = statSync(join(first.bundleDir, "index.js")).mtimeMs;

    const again = await workerBundle(root);
    expect(again.bundleDir).toBe(first.bundleDir);
    expect(statSync(join(again.bundleDir, "index.js")).mtimeMs).toBe(built);

    appendFileSync(join(root, "workers/index.ts"), "\n// changed\n");
    const changed = await workerBundle(root);
    expect(changed.bundleDir).not.toBe(first.bundleDir);
    expect(readFileSync(join(changed.bundleDir, "index.js"), "utf8")).toContain("StoreShard");
    expect(statSync(join(first.bundleDir, "index.js")).isFile()).toBe(true); // earlier ones are kept
  });
});
