// Writes a set of files into a volume directory the way the kubelet's atomic
// writer does: a timestamped directory holds the payload, `..data` links to
// it, and each top-level name is a link through `..data`, so readers never
// see a half-written update.
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, normalize } from "node:path";

export interface FileProjection {
  data: Buffer;
  mode: number;
}

function sameAsCurrent(dir: string, files: Map<string, FileProjection>): boolean {
  const data = join(dir, "..data");
  if (!existsSync(data)) return false;
  for (const [p, f] of files) {
    try {
      const cur = readFileSync(join(data, p));
      if (!cur.equals(f.data)) return false;
      if ((lstatSync(join(data, p)).mode & 0o777) !== f.mode) return false;
    } catch {
      return false;
    }
  }
  const tops = new Set([...files.keys()].map((p) => p.split("/")[0]));
  for (const name of readdirSync(dir)) if (!name.startsWith("..") && !tops.has(name)) return false;
  return true;
}

/** Validates a relative payload path: no absolute paths, no `..` elements. */
export function validPayloadPath(p: string): boolean {
  if (!p || p.startsWith("/")) return false;
  return !normalize(p)
    .split("/")
    .some((seg) => seg === ".." || seg.startsWith(".."));
}

/** Writes `files` into `dir`; returns false when nothing changed. */
export function writeAtomic(dir: string, files: Map<string, FileProjection>): boolean {
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  if (sameAsCurrent(dir, files)) return false;
  const stamp = `..${new Date().toISOString().replace(/[-:.TZ]/g, "_")}${Math.random().toString(36).slice(2, 8)}`;
  const tsDir = join(dir, stamp);
  mkdirSync(tsDir, { mode: 0o755 });
  for (const [p, f] of files) {
    if (!validPayloadPath(p)) throw new Error(`invalid path ${p}`);
    const target = join(tsDir, p);
    mkdirSync(dirname(target), { recursive: true, mode: 0o755 });
    writeFileSync(target, f.data);
    chmodSync(target, f.mode);
  }
  let old: string | undefined;
  try {
    old = readlinkSync(join(dir, "..data"));
  } catch {}
  const tmpLink = join(dir, "..data_tmp");
  rmSync(tmpLink, { force: true });
  symlinkSync(stamp, tmpLink);
  renameSync(tmpLink, join(dir, "..data"));
  const tops = new Set([...files.keys()].map((p) => p.split("/")[0] as string));
  for (const top of tops) {
    const link = join(dir, top);
    let ok = false;
    try {
      ok = lstatSync(link).isSymbolicLink() && readlinkSync(link) === join("..data", top);
    } catch {}
    if (!ok) {
      rmSync(link, { force: true, recursive: true });
      symlinkSync(join("..data", top), link);
    }
  }
  for (const name of readdirSync(dir)) {
    if (name.startsWith("..")) continue;
    if (!tops.has(name)) rmSync(join(dir, name), { force: true, recursive: true });
  }
  if (old && old !== stamp) rmSync(join(dir, old), { force: true, recursive: true });
  return true;
}
