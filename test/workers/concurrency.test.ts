// Optimistic concurrency under contention: many clients doing read-modify-write on one
// object with resourceVersion preconditions lose no increment and double none.
import { describe, expect, it } from "vitest";
import { api, freshNamespace, shared } from "../helpers/cluster";

const t = shared();
const CLIENTS = 20;
const INCREMENTS = 50;

describe("concurrent read-modify-write", () => {
  it(`${CLIENTS} clients x ${INCREMENTS} increments end at exactly ${CLIENTS * INCREMENTS}`, async () => {
    const ns = await freshNamespace(t, "cc");
    const url = `/api/v1/namespaces/${ns}/configmaps/counter`;
    const created = await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "counter" },
      data: { n: "0" },
    });
    expect(created.status).toBe(201);

    let conflicts = 0;
    const unexpected: string[] = [];
    // each successful write records the value it wrote and the resourceVersion it got
    const written: Array<{ n: number; rv: string; client: number }> = [];
    const client = async (id: number) => {
      let misses = 0;
      for (let done = 0; done < INCREMENTS; ) {
        const cur = await api(t, "GET", url);
        if (cur.status !== 200) {
          unexpected.push(`GET ${cur.status} ${cur.text}`);
          return;
        }
        const obj = cur.json;
        const next = Number(obj.data.n) + 1;
        obj.data.n = String(next);
        obj.data[`last`] = String(id);
        const put = await api(t, "PUT", url, obj); // carries metadata.resourceVersion from the GET
        if (put.status === 200) {
          written.push({ n: next, rv: put.json.metadata.resourceVersion, client: id });
          done++;
          misses = 0;
        } else if (put.status === 409) {
          expect(put.json.reason).toBe("Conflict");
          conflicts++;
          misses++;
          // jittered exponential backoff, as client-go's retry.RetryOnConflict does
          await new Promise((r) => setTimeout(r, Math.random() * 50 * 2 ** Math.min(misses, 4)));
        } else {
          unexpected.push(`PUT ${put.status} ${put.text}`);
          return;
        }
      }
    };
    const t0 = Date.now();
    await Promise.all(Array.from({ length: CLIENTS }, (_, i) => client(i)));
    const ms = Date.now() - t0;
    console.log(`concurrency: ${CLIENTS * INCREMENTS} increments, ${conflicts} conflicts, ${ms} ms`);

    expect(unexpected).toEqual([]);
    const final = await api(t, "GET", url);
    expect(final.json.data.n).toBe(String(CLIENTS * INCREMENTS));
    // every value 1..1000 was written exactly once, by a write that got a distinct, increasing RV
    const byValue = [...written].sort((a, b) => a.n - b.n);
    expect(byValue.map((w) => w.n)).toEqual(Array.from({ length: CLIENTS * INCREMENTS }, (_, i) => i + 1));
    for (let i = 1; i < byValue.length; i++) {
      expect(Number(byValue[i].rv)).toBeGreaterThan(Number(byValue[i - 1].rv));
    }
    expect(final.json.metadata.resourceVersion).toBe(byValue[byValue.length - 1].rv);
    // contention really happened
    expect(conflicts).toBeGreaterThan(0);
  }, 300_000); // ~1000 serialized read-modify-write cycles: ~30-50 s here, more on a loaded machine
});
