import { describe, expect, it } from "vitest";
import { StatusError } from "../../../api/errors";
import { applyJsonPatch, parsePointer } from "../../../api/patch/json-patch";

function fails(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(StatusError);
    return e as StatusError;
  }
  throw new Error("expected a StatusError");
}

const pod = () => ({
  metadata: { name: "p", labels: { app: "web", "a/b": "x", "t~n": "y" } },
  spec: {
    containers: [
      { name: "a", image: "a:1" },
      { name: "b", image: "b:1" },
    ],
  },
});

describe("RFC 6902 JSON patch", () => {
  it("adds, replaces and removes object members", () => {
    const out = applyJsonPatch(pod(), [
      { op: "add", path: "/metadata/labels/tier", value: "front" },
      { op: "replace", path: "/spec/containers/0/image", value: "a:2" },
      { op: "remove", path: "/metadata/labels/app" },
    ]) as ReturnType<typeof pod>;
    expect(out.metadata.labels).toEqual({ "a/b": "x", "t~n": "y", tier: "front" });
    expect(out.spec.containers[0].image).toBe("a:2");
  });

  it("unescapes ~1 and ~0 in pointers", () => {
    expect(parsePointer("/a~1b/t~0n/~01")).toEqual(["a/b", "t~n", "~1"]);
    const out = applyJsonPatch(pod(), [
      { op: "remove", path: "/metadata/labels/a~1b" },
      { op: "replace", path: "/metadata/labels/t~0n", value: "z" },
    ]) as ReturnType<typeof pod>;
    expect(out.metadata.labels).toEqual({ app: "web", "t~n": "z" });
  });

  it("inserts into arrays by index and appends with -", () => {
    const out = applyJsonPatch(pod(), [
      { op: "add", path: "/spec/containers/1", value: { name: "mid" } },
      { op: "add", path: "/spec/containers/-", value: { name: "end" } },
    ]) as ReturnType<typeof pod>;
    expect(out.spec.containers.map((c) => c.name)).toEqual(["a", "mid", "b", "end"]);
  });

  it("moves and copies values", () => {
    const out = applyJsonPatch(pod(), [
      { op: "copy", from: "/spec/containers/0", path: "/spec/containers/-" },
      { op: "move", from: "/metadata/labels/app", path: "/metadata/labels/application" },
    ]) as ReturnType<typeof pod>;
    expect(out.spec.containers).toHaveLength(3);
    expect(out.spec.containers[2]).toEqual({ name: "a", image: "a:1" });
    expect(out.metadata.labels).toEqual({ "a/b": "x", "t~n": "y", application: "web" });
  });

  it("copies are independent of their source", () => {
    const out = applyJsonPatch(pod(), [
      { op: "copy", from: "/spec/containers/0", path: "/spec/containers/-" },
      { op: "replace", path: "/spec/containers/2/image", value: "changed" },
    ]) as ReturnType<typeof pod>;
    expect(out.spec.containers[0].image).toBe("a:1");
  });

  it("refuses copies that together would add more than 3 MiB, before making them", () => {
    // each copy doubles the list: 40 of them would ask for ~1 TB
    const doc = { list: ["x".repeat(1000)] };
    const doubling = Array.from({ length: 40 }, () => ({ op: "copy", from: "/list", path: "/list/-" }));
    const err = fails(() => applyJsonPatch(doc, doubling));
    expect(err.code).toBe(422);
    expect(String((err as { cause?: Error }).cause?.message)).toMatch(/past the limit of 3145728/);
    // up to the limit, copies are made: 11 doublings take the document to ~2 MB
    const out = applyJsonPatch(doc, doubling.slice(0, 11)) as { list: unknown[] };
    expect(out.list).toHaveLength(12);
    expect(JSON.stringify(out).length).toBeGreaterThan(2_000_000);
    expect(doc.list).toHaveLength(1);
  });

  it("passes a matching test and fails a mismatching one with 422", () => {
    expect(() => applyJsonPatch(pod(), [{ op: "test", path: "/metadata/name", value: "p" }])).not.toThrow();
    const err = fails(() => applyJsonPatch(pod(), [{ op: "test", path: "/metadata/name", value: "q" }]));
    expect(err.code).toBe(422);
    expect(err.reason).toBe("Invalid");
    expect(err.message).toBe("the server rejected our request due to an error in our request");
  });

  it("test compares structurally", () => {
    expect(() =>
      applyJsonPatch(pod(), [{ op: "test", path: "/spec/containers/1", value: { image: "b:1", name: "b" } }]),
    ).not.toThrow();
  });

  it("reports paths that do not exist as 422", () => {
    expect(fails(() => applyJsonPatch(pod(), [{ op: "remove", path: "/spec/nope" }])).code).toBe(422);
    expect(fails(() => applyJsonPatch(pod(), [{ op: "replace", path: "/spec/nope", value: 1 }])).code).toBe(
      422,
    );
    expect(fails(() => applyJsonPatch(pod(), [{ op: "add", path: "/a/b/c", value: 1 }])).code).toBe(422);
    expect(
      fails(() => applyJsonPatch(pod(), [{ op: "add", path: "/spec/containers/9", value: 1 }])).code,
    ).toBe(422);
    expect(fails(() => applyJsonPatch(pod(), [{ op: "bogus", path: "/x" }])).code).toBe(422);
    expect(fails(() => applyJsonPatch(pod(), [{ op: "add", value: 1 }])).code).toBe(422);
  });

  it("rejects a document that is not a list of operations with 400", () => {
    const err = fails(() => applyJsonPatch(pod(), { op: "add", path: "/x", value: 1 }));
    expect(err.code).toBe(400);
    expect(err.reason).toBe("BadRequest");
    expect(fails(() => applyJsonPatch(pod(), ["x"])).code).toBe(400);
  });

  it("limits the number of operations", () => {
    const ops = Array.from({ length: 10001 }, () => ({ op: "test", path: "/metadata/name", value: "p" }));
    expect(fails(() => applyJsonPatch(pod(), ops)).code).toBe(413);
  });

  it("never mutates its input, even when a later operation fails", () => {
    const original = pod();
    const snapshot = JSON.parse(JSON.stringify(original));
    applyJsonPatch(original, [{ op: "remove", path: "/metadata/labels" }]);
    fails(() =>
      applyJsonPatch(original, [
        { op: "remove", path: "/metadata/name" },
        { op: "test", path: "/x", value: 1 },
      ]),
    );
    expect(original).toEqual(snapshot);
  });
});
