import { describe, expect, it } from "vitest";
import { StatusError } from "../../../api/errors";
import { applyPatchByContentType } from "../../../api/patch";

const pod = () => ({
  metadata: { name: "p", labels: { a: "1" } },
  spec: {
    containers: [
      { name: "c", image: "x" },
      { name: "d", image: "y" },
    ],
  },
});

function status(fn: () => unknown): StatusError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(StatusError);
    return e as StatusError;
  }
  throw new Error("expected a StatusError");
}

describe("applyPatchByContentType", () => {
  it("dispatches JSON patch", () => {
    const out = applyPatchByContentType(
      pod(),
      [{ op: "replace", path: "/metadata/labels/a", value: "2" }],
      "application/json-patch+json",
      "Pod",
    );
    expect(out).toMatchObject({ metadata: { labels: { a: "2" } } });
  });

  it("dispatches merge patch: lists are replaced", () => {
    const out = applyPatchByContentType(
      pod(),
      { spec: { containers: [{ name: "c", image: "z" }] } },
      "application/merge-patch+json; charset=utf-8",
      "Pod",
    ) as ReturnType<typeof pod>;
    expect(out.spec.containers).toEqual([{ name: "c", image: "z" }]);
  });

  it("dispatches strategic merge patch: containers merge by name", () => {
    const out = applyPatchByContentType(
      pod(),
      { spec: { containers: [{ name: "c", image: "z" }] } },
      "application/strategic-merge-patch+json",
      "Pod",
    ) as ReturnType<typeof pod>;
    expect(out.spec.containers).toEqual([
      { name: "c", image: "z" },
      { name: "d", image: "y" },
    ]);
  });

  it("answers 415 for unknown types, apply patches, and strategic patches of custom resources", () => {
    const bad = status(() => applyPatchByContentType(pod(), {}, "text/plain", "Pod"));
    expect(bad.code).toBe(415);
    expect(bad.reason).toBe("UnsupportedMediaType");
    expect(bad.message).toBe(
      "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml",
    );
    expect(status(() => applyPatchByContentType(pod(), {}, "application/apply-patch+yaml", "Pod")).code).toBe(
      415,
    );
    const crd = status(() =>
      applyPatchByContentType({}, {}, "application/strategic-merge-patch+json", "Widget", {
        customResource: true,
      }),
    );
    expect(crd.message).toBe(
      "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
    );
  });
});
