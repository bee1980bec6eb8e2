// Printing a benchmark's figures as a table and writing them as flat JSON to
// .edgeplane/bench/<name>.json under the repo root (the contract in ARCHITECTURE.md).
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { round } from "./stats";

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

export type Row = [label: string, ...cells: (string | number)[]];

const cell = (v: string | number): string =>
  typeof v === "number" ? (Number.isFinite(v) ? String(round(v, v >= 100 ? 0 : 2)) : "-") : v;

/** A plain-text table: first column left-aligned, the rest right-aligned. */
export function table(title: string, header: string[], rows: Row[]): string {
  const text = [header, ...rows.map((r) => r.map(cell))];
  const widths = header.map((_, c) => Math.max(...text.map((r) => (r[c] ?? "").length)));
  const line = (r: string[]) =>
    r.map((v, c) => (c === 0 ? v.padEnd(widths[c] ?? 0) : v.padStart(widths[c] ?? 0))).join("  ");
  const sep = widths.map((w) => "-".repeat(w)).join("  ");
  return [`\n${title}`, line(text[0] as string[]), sep, ...text.slice(1).map(line)].join("\n");
}

/** Flat JSON of finite numbers (NaN/Infinity become null), written under .edgeplane/bench/. */
export function writeResults(name: string, metrics: Record<string, number>): string {
  const dir = join(REPO_ROOT, ".edgeplane", "bench");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}.json`);
  const flat: Record<string, number | null> = {};
  for (const [k, v] of Object.entries(metrics)) flat[k] = Number.isFinite(v) ? round(v, 3) : null;
  writeFileSync(file, `${JSON.stringify(flat, null, 2)}\n`);
  return file;
}
