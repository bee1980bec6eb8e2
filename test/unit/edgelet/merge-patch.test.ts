import { describe, expect, it } from "vitest";
import { createMergePatch } from "../../../agent/edgelet/merge-patch";

describe("createMergePatch", () => {
  it("is undefined for equal documents", () => {
    expect(createMergePatch({ a: 1, b: [1, { c: 2 }] }, { a: 1, b: [1, { c: 2 }] })).toBeUndefined();
  });
  it("nulls removed keys, recurses into objects and replaces arrays whole", () => {
    expect(
      createMergePatch(
        { phase: "Pending", reason: "X", state: { waiting: { reason: "ContainerCreating" } }, list: [1, 2] },
        { phase: "Running", state: { running: { startedAt: "t" } }, list: [1] },
      ),
    ).toEqual({
      phase: "Running",
      reason: null,
      state: { waiting: null, running: { startedAt: "t" } },
      list: [1],
    });
  });
});
