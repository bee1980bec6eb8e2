// Which volume a claim binds to (upstream's FindMatchingVolume and the PV controller's
// access-mode index), and which class is the default when several say they are.
import { describe, expect, it } from "vitest";
import { findMatchingVolume } from "../../../durable-objects/controllers/volume/match";
import { defaultClass } from "../../../workers/admission/storage";

const pv = (name: string, spec: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  metadata: { name, ...extra },
  spec: { storageClassName: "fast", accessModes: ["ReadWriteOnce"], ...spec },
  status: { phase: "Available" },
});
const claim = (spec: Record<string, unknown> = {}) => ({
  metadata: { name: "data", namespace: "ns", uid: "u1" },
  spec: {
    storageClassName: "fast",
    accessModes: ["ReadWriteOnce"],
    resources: { requests: { storage: "1Gi" } },
    ...spec,
  },
});
const names = (v: any) => v?.metadata.name;

describe("findMatchingVolume", () => {
  it("takes the smallest volume that fits, of the claim's class and volume mode", () => {
    const vols = [
      pv("big", { capacity: { storage: "10Gi" } }),
      pv("small", { capacity: { storage: "500Mi" } }),
      pv("right", { capacity: { storage: "2Gi" } }),
      pv("other-class", { capacity: { storage: "1Gi" }, storageClassName: "slow" }),
      pv("block", { capacity: { storage: "1Gi" }, volumeMode: "Block" }),
    ];
    expect(names(findMatchingVolume(claim(), vols))).toBe("right");
  });

  it("tries the volumes with the fewest access modes first", () => {
    const vols = [
      pv("many", { capacity: { storage: "1Gi" }, accessModes: ["ReadWriteOnce", "ReadOnlyMany"] }),
      pv("one", { capacity: { storage: "5Gi" } }),
    ];
    expect(names(findMatchingVolume(claim(), vols))).toBe("one");
    expect(names(findMatchingVolume(claim({ accessModes: ["ReadOnlyMany"] }), vols))).toBe("many");
  });

  it("honours a volume pre-bound to the claim, skips others' and non-Available ones, and the selector", () => {
    const mine = pv("mine", { capacity: { storage: "9Gi" }, claimRef: { namespace: "ns", name: "data" } });
    const theirs = pv("theirs", {
      capacity: { storage: "1Gi" },
      claimRef: { namespace: "ns", name: "other" },
    });
    const released = { ...pv("released", { capacity: { storage: "1Gi" } }), status: { phase: "Released" } };
    expect(names(findMatchingVolume(claim(), [theirs, released, mine]))).toBe("mine");
    expect(findMatchingVolume(claim(), [theirs, released])).toBeUndefined();
    const labelled = pv("labelled", { capacity: { storage: "5Gi" } }, { labels: { tier: "gold" } });
    const plain = pv("plain", { capacity: { storage: "1Gi" } });
    const sel = claim({ selector: { matchLabels: { tier: "gold" } } });
    expect(names(findMatchingVolume(sel, [plain, labelled]))).toBe("labelled");
  });

  it("binds nothing for a first-consumer class without a node; with one, only volumes it may use", () => {
    const pinned = pv("pinned", {
      capacity: { storage: "1Gi" },
      nodeAffinity: {
        required: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In", values: ["a"] }] },
          ],
        },
      },
    });
    expect(findMatchingVolume(claim(), [pinned], { delayBinding: true })).toBeUndefined();
    const at = (name: string) => ({
      node: { name, labels: { "kubernetes.io/hostname": name } },
      delayBinding: true,
    });
    expect(names(findMatchingVolume(claim(), [pinned], at("a")))).toBe("pinned");
    expect(findMatchingVolume(claim(), [pinned], at("b"))).toBeUndefined();
    expect(
      findMatchingVolume(claim(), [pinned], { ...at("a"), excluded: new Set(["pinned"]) }),
    ).toBeUndefined();
  });
});

describe("defaultClass", () => {
  const sc = (name: string, created: string, isDefault: string | undefined) => ({
    metadata: {
      name,
      creationTimestamp: created,
      annotations:
        isDefault === undefined ? {} : { "storageclass.kubernetes.io/is-default-class": isDefault },
    },
  });
  it('is the newest class marked default (exactly "true"), then the first by name', () => {
    expect(
      defaultClass([sc("a", "2026-01-01T00:00:00Z", "true"), sc("b", "2026-02-01T00:00:00Z", "true")])
        ?.metadata.name,
    ).toBe("b");
    expect(
      defaultClass([sc("z", "2026-01-01T00:00:00Z", "true"), sc("y", "2026-01-01T00:00:00Z", "true")])
        ?.metadata.name,
    ).toBe("y");
    expect(
      defaultClass([sc("a", "2026-03-01T00:00:00Z", "True"), sc("b", "2026-01-01T00:00:00Z", undefined)]),
    ).toBeUndefined();
  });
});
