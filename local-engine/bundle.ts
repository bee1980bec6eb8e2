// The Worker bundle exactly as `wrangler deploy` would upload it (wrangler's own build, with
// the SQL migrations beside it as text modules), built once per state of its sources and
// kept under .edgeplane/bundles/<hash>, with a manifest of what the engine needs to run it:
// Miniflare's worker options from wrangler.toml and the list of modules. Every local server
// start (npm start, each test server, each benchmark) used to spend ~2 s rebuilding the same
// bundle, ~1 s loading wrangler for the options and ~1.4 s in Miniflare finding the modules
// by parsing the 4 MB bundle; with the manifest workerd is up in ~0.5 s.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { ModuleDefinition, ModuleRule, WorkerOptions } from "miniflare";

/** What the bundle is built from: the Worker's source folders and the build's settings. */
const SOURCE_DIRS = ["api", "workers", "durable-objects", "migrations"];
const SOURCE_FILES = ["wrangler.toml", "package-lock.json", "tsconfig.json"];
/** bundles kept besides the one in use (a few source states back, for servers still running) */
const KEEP = 3;

function sourceHash(root: string): string {
  const h = createHash("sha256");
  const add = (rel: string) => {
    h.update(`${rel}\0`);
    h.update(readFileSync(join(root, rel)));
    h.update("\0");
  };
  const walk = (rel: string) => {
    const entries = readdirSync(join(root, rel), { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      if (e.isDirectory()) walk(`${rel}/${e.name}`);
      else if (e.isFile()) add(`${rel}/${e.name}`);
    }
  };
  for (const f of SOURCE_FILES) if (existsSync(join(root, f))) add(f);
  for (const d of SOURCE_DIRS) if (existsSync(join(root, d))) walk(d);
  return h.digest("hex").slice(0, 20);
}

/** Runs wrangler's deploy build into `outDir`. */
export function buildBundle(root: string, outDir: string): void {
  execFileSync(
    process.execPath,
    [
      join(root, "node_modules/wrangler/bin/wrangler.js"),
      "deploy",
      "--dry-run",
      "--config",
      join(root, "wrangler.toml"),
      "--outdir",
      outDir,
    ],
    {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", WRANGLER_LOG: "error", NO_COLOR: "1" },
    },
  );
}

export const MANIFEST = "manifest.json";
const MAIN = "index.js";

/** What MANIFEST holds: Miniflare's options from wrangler.toml, and the bundle's modules. */
export interface BundleManifest {
  workerOptions: WorkerOptions;
  /** paths relative to the bundle's directory */
  modules: ModuleDefinition[];
}

/** What the engine is told of a bundle (engine-host.ts's config). */
export interface Bundle {
  bundleDir: string;
}

/**
 * The modules of a built bundle, typed by wrangler's module rules (by extension: the
 * migrations are "**\/*.sql" Text modules); source maps and the README are not modules.
 */
function modulesOf(dir: string, rules: ModuleRule[]): ModuleDefinition[] {
  const typeOf = (name: string) => {
    for (const r of rules)
      for (const glob of r.include) {
        const ext = /^\*\*\/\*(\.[a-z0-9]+)$/.exec(glob)?.[1];
        if (ext && name.endsWith(ext)) return r.type;
      }
    return undefined;
  };
  const modules: ModuleDefinition[] = [{ type: "ESModule", path: MAIN }];
  for (const name of readdirSync(dir).sort()) {
    const type = name === MAIN ? undefined : typeOf(name);
    if (type) modules.push({ type, path: name });
  }
  return modules;
}

/** The part of wrangler's API used here. */
interface WranglerApi {
  unstable_getMiniflareWorkerOptions(configPath: string): { workerOptions: WorkerOptions };
}

async function writeManifest(root: string, dir: string) {
  const { unstable_getMiniflareWorkerOptions }: WranglerApi = await import(
    pathToFileURL(join(root, "node_modules/wrangler/wrangler-dist/cli.js")).href
  );
  const { workerOptions } = unstable_getMiniflareWorkerOptions(join(root, "wrangler.toml"));
  const { modulesRules, ...options } = workerOptions;
  const manifest: BundleManifest = { workerOptions: options, modules: modulesOf(dir, modulesRules ?? []) };
  writeFileSync(join(dir, MANIFEST), JSON.stringify(manifest, null, 1));
}

/** The bundle for the sources as they are now: { bundleDir }, built if not kept yet. */
export async function workerBundle(root: string): Promise<Bundle> {
  const dir = join(root, ".edgeplane", "bundles");
  const hash = sourceHash(root);
  const out = join(dir, hash);
  if (!existsSync(join(out, MANIFEST))) {
    mkdirSync(dir, { recursive: true });
    const tmp = `${out}.building-${process.pid}-${Date.now()}`;
    buildBundle(root, tmp);
    await writeManifest(root, tmp);
    // an unfinished directory of that name (no manifest) is replaced; a finished one, built
    // by another start meanwhile, is kept
    if (existsSync(out) && !existsSync(join(out, MANIFEST))) rmSync(out, { recursive: true, force: true });
    try {
      renameSync(tmp, out);
    } catch {
      rmSync(tmp, { recursive: true, force: true });
    }
    prune(dir, hash);
  } else {
    const now = new Date();
    utimesSync(out, now, now); // recently used: kept by prune
  }
  return { bundleDir: out };
}

/** Drops all but the KEEP most recently used other bundles, and builds abandoned 10 min ago. */
function prune(dir: string, current: string) {
  const others = readdirSync(dir)
    .filter((n) => n !== current)
    .map((n) => ({ n, t: statSync(join(dir, n)).mtimeMs }))
    .sort((a, b) => b.t - a.t);
  const building = others.filter((o) => o.n.includes(".building-"));
  const built = others.filter((o) => !o.n.includes(".building-"));
  const stale = [...built.slice(KEEP), ...building.filter((o) => Date.now() - o.t > 600_000)];
  for (const { n } of stale) rmSync(join(dir, n), { recursive: true, force: true });
}
