// The sharding setting and the vector resourceVersions of resources over several shards.
import { describe, expect, it } from "vitest";
import {
  checkShardSetting,
  localVersion,
  shardKey,
  shardObjectName,
  shardOf,
  shardPlan,
  singleShard,
  splitShardKey,
  vectorParts,
} from "../../../durable-objects/store/shard-plan";

const env = { EDGEPLANE_STORE_SHARDS: "pods=4, events=3/name,leases=8" };
const pods = { group: "", resource: "pods" };
const leases = { group: "coordination.k8s.io", resource: "leases" };

describe("EDGEPLANE_STORE_SHARDS", () => {
  it("names resources by plural or plural.group, split by namespace unless said (leases by name)", () => {
    expect(shardPlan(env, pods)).toEqual({ count: 4, by: "namespace" });
    expect(shardPlan(env, { group: "", resource: "events" })).toEqual({ count: 3, by: "name" });
    expect(shardPlan(env, leases)).toEqual({ count: 8, by: "name" });
    expect(shardPlan(env, { group: "", resource: "configmaps" })).toEqual({ count: 1, by: "namespace" });
    expect(shardPlan({}, pods).count).toBe(1);
    expect(shardPlan({ EDGEPLANE_STORE_SHARDS: "leases=2,leases.coordination.k8s.io=5" }, leases).count).toBe(
      5,
    );
  });

  it("says what it cannot read", () => {
    expect(() => checkShardSetting("pods")).toThrow(/cannot read "pods"/);
    expect(() => checkShardSetting("pods=0")).toThrow(/1 to 64/);
    expect(() => checkShardSetting("pods=4/zone")).toThrow(/cannot read/);
    expect(() => checkShardSetting("pods=4,leases=2/name")).not.toThrow();
  });
});

describe("which shard", () => {
  const byNs = { count: 4, by: "namespace" as const };
  const byName = { count: 4, by: "name" as const };

  it("keeps a namespace together when split by namespace, and spreads names when split by name", () => {
    const shards = new Set(Array.from({ length: 50 }, (_, i) => shardOf(byNs, "team", `p${i}`)));
    expect(shards.size).toBe(1);
    const spread = new Set(Array.from({ length: 50 }, (_, i) => shardOf(byName, "kube-node-lease", `n${i}`)));
    expect(spread.size).toBe(4);
    for (let i = 0; i < 20; i++) expect(shardOf(byName, "a", `x${i}`)).toBe(shardOf(byName, "a", `x${i}`));
  });

  it("answers a namespace's query from one shard when it can", () => {
    expect(singleShard(byNs, true, "team", undefined)).toBe(shardOf(byNs, "team", ""));
    expect(singleShard(byNs, true, undefined, undefined)).toBeUndefined();
    expect(singleShard(byName, true, "team", undefined)).toBeUndefined();
    expect(singleShard(byName, true, "team", "metadata.name=x")).toBe(shardOf(byName, "team", "x"));
    expect(singleShard(byName, false, undefined, "metadata.name=n1")).toBe(shardOf(byName, "", "n1"));
    expect(singleShard({ count: 1, by: "namespace" }, true, undefined, undefined)).toBe(0);
  });

  it("names shard objects and keys so shard 0 keeps an unsplit resource's", () => {
    expect(shardObjectName("default//pods", 0)).toBe("default//pods");
    expect(shardObjectName("default//pods", 3)).toBe("default//pods~3");
    expect(shardKey("/pods", 0)).toBe("/pods");
    expect(shardKey("/pods", 2)).toBe("/pods~2");
    expect(splitShardKey("/pods~2")).toEqual({ key: "/pods", shard: 2 });
    expect(splitShardKey("coordination.k8s.io/leases")).toEqual({
      key: "coordination.k8s.io/leases",
      shard: 0,
    });
    expect(splitShardKey("/pods~x")).toEqual({ key: "/pods~x", shard: 0 });
  });
});

describe("vector resourceVersions", () => {
  it("gives each shard its part", () => {
    expect(vectorParts("5.0.7.9", 4)).toEqual(["5", "0", "7", "9"]);
    expect(vectorParts("", 3)).toEqual(["", "", ""]);
    expect(vectorParts("0", 2)).toEqual(["0", "0"]);
    expect(vectorParts(undefined, 2)).toEqual(["", ""]);
    expect(vectorParts("17", 4)).toBeUndefined(); // a plain number says nothing of the others
    expect(() => vectorParts("1.2", 4)).toThrow(/invalid resource version/);
    expect(() => vectorParts("1.x.3.4", 4)).toThrow(/invalid resource version/);
    expect(localVersion("5.0.7.9", 2, 4)).toBe("7");
    expect(localVersion("12", 2, 4)).toBe("12");
    expect(() => localVersion("5.0", 1, 4)).toThrow(/invalid/);
  });
});
