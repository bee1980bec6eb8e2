// A list over all shards of a spread resource (shard-plan.ts): each shard lists at its part
// of the snapshot, and the answers merge in key order (namespace, then name), as one shard's
// list is ordered. The list's resourceVersion is the vector of the shards' snapshots. A page
// cut at `limit` ends at a key K: every shard's objects up to K were given, so its continue
// token holds the vector and K, and the next page asks every shard for what follows K at its
// own snapshot (list.ts's continue token: a revision and a start key).
import { badRequest, expired } from "../../api/errors";
import type { KubeObject } from "../../api/types";
import { encodeContinue } from "./list";
import type { ListQuery } from "./protocol";
import { formatVector, vectorParts } from "./shard-plan";

interface MergedToken {
  rvs: number[];
  start: [string, string];
}

function encodeMerged(t: MergedToken): string {
  return btoa(JSON.stringify({ v: "meta.k8s.io/v1", rvs: t.rvs, start: t.start }));
}

function decodeMerged(s: string, count: number): MergedToken {
  try {
    const t = JSON.parse(atob(s));
    if (
      !Array.isArray(t.rvs) ||
      t.rvs.length !== count ||
      t.rvs.some((n: unknown) => typeof n !== "number") ||
      !Array.isArray(t.start) ||
      t.start.length !== 2
    )
      throw new Error();
    return { rvs: t.rvs, start: [String(t.start[0]), String(t.start[1])] };
  } catch {
    throw badRequest(
      "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
    );
  }
}

type Entry = { key: [string, string]; value: unknown };

interface ShardList {
  kind?: string;
  apiVersion?: string;
  metadata?: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  items?: KubeObject[];
  rows?: { object?: KubeObject }[];
  columnDefinitions?: unknown[];
}

function keyOf(o: KubeObject | undefined): [string, string] {
  return [o?.metadata?.namespace ?? "", o?.metadata?.name ?? ""];
}

function before(a: [string, string], b: [string, string]): boolean {
  return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
}

/**
 * The merged list's JSON. `list(i, q)` lists shard i with the query given (undefined: shard i
 * is left out, as one that held nothing at the snapshot).
 */
export async function mergedList(
  count: number,
  shape: { kind: string; apiVersion: string },
  q: ListQuery,
  list: (i: number, q: ListQuery) => Promise<string>,
): Promise<string> {
  const queries: (ListQuery | undefined)[] = [];
  let rvs: number[] = new Array(count).fill(0);
  // rows without their objects have no key to merge by: the shards send metadata, dropped here
  const bare = q.table?.include === "None";
  const base: ListQuery = bare ? { ...q, table: { ...q.table!, include: "Metadata" } } : { ...q };
  if (q.continue) {
    const t = decodeMerged(q.continue, count);
    rvs = t.rvs;
    for (let i = 0; i < count; i++)
      queries.push(
        t.rvs[i] === 0
          ? undefined
          : {
              ...base,
              continue: encodeContinue({ rv: t.rvs[i], start: t.start }),
              resourceVersion: undefined,
              resourceVersionMatch: undefined,
            },
      );
  } else {
    let match = q.resourceVersionMatch;
    const rv = q.resourceVersion;
    let parts: (string | undefined)[] | undefined = vectorParts(rv, count);
    if (!parts) {
      // a plain number says nothing of the other shards
      if (!/^\d+$/.test(rv!)) throw badRequest(`invalid resourceVersion: ${rv}`);
      if (match === "Exact") throw expired(`too old resource version: ${rv}`);
      parts = new Array(count).fill(undefined);
      match = undefined;
    }
    for (let i = 0; i < count; i++)
      queries.push({ ...base, continue: undefined, resourceVersion: parts[i], resourceVersionMatch: match });
  }

  const lists = await Promise.all(
    queries.map(async (sq, i) => (sq ? (JSON.parse(await list(i, sq)) as ShardList) : undefined)),
  );
  const table = !!q.table;
  let remaining = 0;
  let remainingKnown = true;
  let anyMore = false;
  const runs: Entry[][] = [];
  lists.forEach((l, i) => {
    if (!l) return;
    rvs[i] = Number(l.metadata?.resourceVersion ?? 0);
    if (l.metadata?.continue) {
      anyMore = true;
      if (l.metadata.remainingItemCount === undefined) remainingKnown = false;
      else remaining += l.metadata.remainingItemCount;
    }
    const values: unknown[] = table ? (l.rows ?? []) : (l.items ?? []);
    runs.push(
      values.map((v) => ({
        key: keyOf(table ? (v as { object?: KubeObject }).object : (v as KubeObject)),
        value: v,
      })),
    );
  });
  // k-way merge: few shards, so a scan of the heads per item
  const merged: Entry[] = [];
  const at = runs.map(() => 0);
  for (;;) {
    let pick = -1;
    for (let r = 0; r < runs.length; r++)
      if (at[r] < runs[r].length && (pick < 0 || before(runs[r][at[r]].key, runs[pick][at[pick]].key)))
        pick = r;
    if (pick < 0) break;
    merged.push(runs[pick][at[pick]++]);
  }
  const limit = q.limit && q.limit > 0 ? q.limit : Number.POSITIVE_INFINITY;
  const page = merged.length > limit ? merged.slice(0, limit) : merged;
  const more = anyMore || merged.length > limit;
  const metadata: Record<string, unknown> = { resourceVersion: formatVector(rvs) };
  if (more && page.length) {
    metadata.continue = encodeMerged({ rvs, start: page[page.length - 1].key });
    // with a selector the count is unknown, and left out, as upstream does
    if (remainingKnown && !q.labelSelector && !q.fieldSelector)
      metadata.remainingItemCount = remaining + (merged.length - page.length);
  }
  const values = page.map((e) => e.value);
  if (table) {
    if (bare) for (const row of values as { object?: unknown }[]) delete row.object;
    return JSON.stringify({
      kind: "Table",
      apiVersion: "meta.k8s.io/v1",
      metadata,
      columnDefinitions: lists.find((l) => l?.columnDefinitions?.length)?.columnDefinitions ?? [],
      rows: values,
    });
  }
  return JSON.stringify({ kind: shape.kind, apiVersion: shape.apiVersion, metadata, items: values });
}
