// Patches over lists of thousands of items (api/patch): the same results as on short lists,
// now that items are found through indexes instead of a scan per item.
import { describe, expect, it } from "vitest";
import { applyPatch } from "../../../api/patch/apply";
import { deleteInPlace, strategicMergePatch } from "../../../api/patch/strategic-merge";
import type { KubeObject } from "../../../api/types";

const N = 4000;
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
type Any = any;

function service(ports: number[]): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "svc", namespace: "default" },
    spec: { ports: ports.map((p) => ({ name: `p${p}`, port: p, protocol: "TCP" })) },
  } as KubeObject;
}

function withFinalizers(finalizers: string[]): KubeObject {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cm", namespace: "default", finalizers } };
}

const as = (manager: string, kind: string, now = "2026-11-30T00:00:00Z") => ({
  manager,
  force: false,
  kind,
  now,
});

describe("patches over long lists", () => {
  it("strategic merge: items merged by key, server-only ones first by live order, new ones after", () => {
    const env = (from: number, to: number, value: string) =>
      range(from, to).map((i) => ({ name: `E${i}`, value }));
    const original = { spec: { containers: [{ name: "c", image: "i", env: env(0, N, "old") }] } };
    const patch = { spec: { containers: [{ name: "c", env: env(N / 2, N + N / 2, "new") }] } };
    const out = strategicMergePatch(original, patch, "Pod") as Any;
    expect(out.spec.containers[0].env).toEqual([...env(0, N / 2, "old"), ...env(N / 2, N + N / 2, "new")]);
  });

  it("strategic merge: a scalar list with the merge strategy keeps one of each value", () => {
    const fins = (from: number, to: number) => range(from, to).map((i) => `example.com/f${i}`);
    const out = strategicMergePatch(
      { metadata: { finalizers: fins(0, N) } },
      { metadata: { finalizers: fins(N / 2, N + N / 2) } },
      "ConfigMap",
    ) as Any;
    expect(out.metadata.finalizers).toEqual(fins(0, N + N / 2));
    const gone = strategicMergePatch(
      { metadata: { finalizers: fins(0, N) } },
      { metadata: { "$deleteFromPrimitiveList/finalizers": fins(1, N) } },
      "ConfigMap",
    ) as Any;
    expect(gone.metadata.finalizers).toEqual(fins(0, 1));
  });

  it("server-side apply: a manager's items merge by key, and those it stops applying are pruned", () => {
    const first = applyPatch(undefined, service(range(1, N + 1)), as("a", "Service"));
    expect((first.spec as Any).ports).toHaveLength(N);
    // another manager adds a field to every item: merged into the same items, none added
    const targets = service(range(1, N + 1));
    for (const p of (targets.spec as Any).ports) p.targetPort = p.port + 10000;
    const second = applyPatch(first, targets, as("b", "Service"));
    const ports = (second.spec as Any).ports;
    expect(ports).toHaveLength(N);
    expect(ports.every((p: Any) => p.targetPort === p.port + 10000)).toBe(true);
    // the first manager keeps two ports: the others stay, as the second still owns them
    expect(
      ((applyPatch(second, service([1, N]), as("a", "Service")).spec as Any).ports as Any[]).length,
    ).toBe(N);
    // with no other owner, what a manager stops applying goes
    const alone = applyPatch(first, service([1, N / 2, N]), as("a", "Service"));
    expect((alone.spec as Any).ports.map((p: Any) => p.port)).toEqual([1, N / 2, N]);
  });

  it("server-side apply: set lists keep live order, add new values after, and prune dropped ones", () => {
    const fins = (ids: number[]) => ids.map((i) => `example.com/f${i}`);
    const first = applyPatch(undefined, withFinalizers(fins(range(0, N))), as("a", "ConfigMap"));
    const kept = range(N / 2, N);
    const next = applyPatch(first, withFinalizers(fins([...kept].reverse())), as("a", "ConfigMap"));
    expect(next.metadata.finalizers).toEqual(fins(kept));
    const more = applyPatch(next, withFinalizers(fins([N + 1, ...kept])), as("a", "ConfigMap"));
    expect(more.metadata.finalizers).toEqual(fins([...kept, N + 1]));
  });

  it("strategic merge: $patch delete leaves the list as shifting items left one by one does", () => {
    // the reference: each deletion, first match first, shifts the rest left in place
    const shifted = (list: unknown[], keys: unknown[]) => {
      const backing = [...list];
      let len = backing.length;
      for (const key of keys)
        for (;;) {
          const i = backing.slice(0, len).findIndex((o: Any) => typeof o === "object" && o.k === key);
          if (i < 0) break;
          backing.copyWithin(i, i + 1, len);
          len--;
        }
      return { backing, len };
    };
    // a fixed sequence (the high bits of a linear congruential generator: its low bits repeat)
    let seed = 7;
    const rand = (m: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return Math.floor(seed / 65536) % m;
    };
    for (let t = 0; t < 3000; t++) {
      const list = range(0, rand(8)).map((i) => (rand(10) === 0 ? "scalar" : { k: `k${rand(4)}`, id: i }));
      const keys = range(0, rand(5)).map(() => `k${rand(5)}`);
      const backing = [...list];
      const len = deleteInPlace(backing, keys, "k");
      expect({ backing, len }).toEqual(shifted(list, keys));
    }
    // and at length: all but one of 10,000 items deleted
    const env = range(0, 10000).map((i) => ({ name: `E${i}`, value: "v" }));
    const del = range(1, 10000).map((i) => ({ name: `E${i}`, $patch: "delete" }));
    const out = strategicMergePatch(
      { spec: { containers: [{ name: "c", env }] } },
      { spec: { containers: [{ name: "c", env: del }] } },
      "Pod",
    ) as Any;
    expect(out.spec.containers[0].env).toEqual([{ name: "E0", value: "v" }]);
  });
});
