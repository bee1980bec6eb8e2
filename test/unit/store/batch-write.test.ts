// writeStaged against a recording SqlStorage that applies its statements to two maps: every
// statement stays within Durable Object SQLite's 100 bound parameters, new rows share
// statements, and the rows that land are those of the batch in its order.
import { describe, expect, it } from "vitest";
import { type Staged, writeStaged } from "../../../durable-objects/store/batch";

interface Db {
  objects: Map<string, unknown[]>;
  changes: Map<number, unknown[]>;
  statements: { query: string; params: unknown[] }[];
}

/** Applies the statement shapes writeStaged uses; anything else fails the test. */
function recordingSql(db: Db): SqlStorage {
  const exec = (query: string, ...params: unknown[]) => {
    db.statements.push({ query, params });
    const rows = (width: number) => {
      expect(params.length % width).toBe(0);
      return Array.from({ length: params.length / width }, (_, i) =>
        params.slice(i * width, (i + 1) * width),
      );
    };
    if (query.startsWith("INSERT OR REPLACE INTO objects")) {
      for (const r of rows(8)) db.objects.set(`${r[0]}/${r[1]}`, r);
    } else if (query.startsWith("INSERT INTO changes")) {
      for (const r of rows(10)) {
        expect(db.changes.has(r[0] as number)).toBe(false);
        db.changes.set(r[0] as number, r);
      }
    } else if (query.startsWith("UPDATE objects")) {
      const key = `${params[5]}/${params[6]}`;
      expect(db.objects.has(key)).toBe(true);
      db.objects.set(key, [params[5], params[6], ...params.slice(0, 5)]);
    } else if (query.startsWith("DELETE FROM objects")) {
      db.objects.delete(`${params[0]}/${params[1]}`);
    } else throw new Error(`unexpected statement ${query}`);
    return { toArray: () => [] } as unknown as SqlStorageCursor<Record<string, SqlStorageValue>>;
  };
  return { exec } as unknown as SqlStorage;
}

let rv = 100;
function staged(type: "ADDED" | "MODIFIED" | "DELETED", name: string, prev = false): Staged {
  rv++;
  const data = JSON.stringify({ metadata: { name, resourceVersion: String(rv) } });
  return {
    change: {
      rv,
      type,
      namespace: "ns",
      name,
      labels: {},
      fields: {},
      prevLabels: prev ? {} : null,
      prevFields: prev ? {} : null,
      data,
    },
    uid: `uid-${name}`,
    labelsJson: "{}",
    fieldsJson: "{}",
    prev: prev
      ? { namespace: "ns", name, uid: `uid-${name}`, rv: 1, labels: "{}", fields: "{}", data: "{}" }
      : undefined,
    at: 1,
  };
}

describe("writing a staged batch", () => {
  it("writes every row of a large mixed batch, in order, within 100 parameters a statement", () => {
    const db: Db = {
      objects: new Map([
        ["ns/old", []],
        ["ns/gone", []],
      ]),
      changes: new Map(),
      statements: [],
    };
    const batch = [
      ...Array.from({ length: 30 }, (_, i) => staged("ADDED", `p${i}`)),
      staged("MODIFIED", "old", true),
      staged("DELETED", "gone", true),
      // deleted and created again within the batch: the create comes last and stays
      staged("DELETED", "p3", true),
      staged("ADDED", "p3"),
      ...Array.from({ length: 5 }, (_, i) => staged("ADDED", `q${i}`)),
    ];
    writeStaged(recordingSql(db), batch);
    for (const s of db.statements) expect(s.params.length).toBeLessThanOrEqual(100);
    // 36 new rows in 4 statements (12 + 12 + 6 before the update, then 6), 3 single-row
    // statements, 39 change-log rows in 4 statements
    expect(db.statements).toHaveLength(11);
    expect(db.changes.size).toBe(batch.length);
    for (const s of batch) expect(db.changes.get(s.change.rv)?.[8]).toBe(s.change.data);
    const names = [...db.objects.keys()].sort();
    expect(names).toEqual(
      [
        "old",
        ...Array.from({ length: 30 }, (_, i) => `p${i}`),
        ...Array.from({ length: 5 }, (_, i) => `q${i}`),
      ]
        .map((n) => `ns/${n}`)
        .sort(),
    );
    const p3 = batch.at(-6)!;
    expect(db.objects.get("ns/p3")?.[3]).toBe(p3.change.rv);
    expect(db.objects.get("ns/old")?.[3]).toBe(batch[30]!.change.rv);
  });

  it("writes a single change with one statement per table", () => {
    const db: Db = { objects: new Map(), changes: new Map(), statements: [] };
    writeStaged(recordingSql(db), [staged("ADDED", "solo")]);
    expect(db.statements.map((s) => s.query.split(" (")[0])).toEqual([
      "INSERT OR REPLACE INTO objects",
      "INSERT INTO changes",
    ]);
  });

  it("keeps a created pod's trace record in its row, closed at the commit", () => {
    const db: Db = { objects: new Map(), changes: new Map(), statements: [] };
    const traced = { ...staged("ADDED", "traced"), trace: "[1]" };
    writeStaged(recordingSql(db), [traced, staged("ADDED", "plain")], 7000);
    expect(db.objects.get("ns/traced")?.[7]).toBe(`[${traced.change.rv},7000,[1]]`);
    expect(db.objects.get("ns/plain")?.[7]).toBeNull();
  });
});
