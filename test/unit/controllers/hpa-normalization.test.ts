// From the metrics' count to the count set, as upstream normalizes it: without behavior the
// downscale stabilization window and the 2x/4 scale-up limit; with behavior the scale-up and
// scale-down stabilization windows, Pods/Percent policies over their periods, selectPolicy
// Max/Min/Disabled; the AbleToScale and ScalingLimited reasons with each.
import { describe, expect, it } from "vitest";
import {
  type Behavior,
  type NormalizeInput,
  ScalingHistory,
} from "../../../durable-objects/controllers/podautoscaler/normalization";

const T0 = Date.parse("2026-01-01T00:00:00Z");
const FIVE_MIN = 300_000;
const input = (o: Partial<NormalizeInput>): NormalizeInput => ({
  behavior: undefined,
  current: 1,
  desired: 1,
  min: 1,
  max: 10,
  downscaleStabilizationMs: FIVE_MIN,
  ...o,
});

describe("without behavior", () => {
  const cases: [string, Partial<NormalizeInput>, number, string, string][] = [
    ["within range", { current: 2, desired: 3 }, 3, "False", "DesiredWithinRange"],
    ["at most 4 from 1", { current: 1, desired: 10, max: 20 }, 4, "True", "ScaleUpLimit"],
    ["at most twice from 3", { current: 3, desired: 10, max: 20 }, 6, "True", "ScaleUpLimit"],
    ["at most maxReplicas", { current: 3, desired: 10, max: 5 }, 5, "True", "TooManyReplicas"],
    ["at least minReplicas", { current: 3, desired: 1, min: 2 }, 2, "True", "TooFewReplicas"],
  ];
  for (const [name, o, want, limited, reason] of cases)
    it(name, () => {
      const n = new ScalingHistory().normalize("ns/h", input(o), T0);
      expect([n.replicas, n.limited.status, n.limited.reason]).toEqual([want, limited, reason]);
      expect(n.ableToScale.reason).toBe("ReadyForNewScale");
    });

  it("scales down only to the highest recommendation of the stabilization window", () => {
    const h = new ScalingHistory();
    h.recordInitial("ns/h", 5, T0);
    expect(h.normalize("ns/h", input({ current: 5, desired: 5 }), T0 + 1000).replicas).toBe(5);
    const held = h.normalize("ns/h", input({ current: 5, desired: 2 }), T0 + 60_000);
    expect(held).toMatchObject({
      replicas: 5,
      ableToScale: {
        reason: "ScaleDownStabilized",
        message:
          "recent recommendations were higher than current one, applying the highest recent recommendation",
      },
    });
    // 3 recommended meanwhile: once the 5s are out of the window, 3 is the highest
    expect(h.normalize("ns/h", input({ current: 5, desired: 3 }), T0 + 200_000).replicas).toBe(5);
    expect(h.normalize("ns/h", input({ current: 5, desired: 2 }), T0 + FIVE_MIN + 1001).replicas).toBe(3);
    expect(h.normalize("ns/h", input({ current: 3, desired: 2 }), T0 + 200_000 + FIVE_MIN + 1).replicas).toBe(
      2,
    );
    // a scale-up is never held
    expect(h.normalize("ns/h", input({ current: 2, desired: 4 }), T0 + 600_000).replicas).toBe(4);
  });

  it("a shorter window (the Worker variable) lets it down sooner; forget drops the history", () => {
    const h = new ScalingHistory();
    h.recordInitial("ns/h", 5, T0);
    const short = { downscaleStabilizationMs: 10_000 };
    expect(h.normalize("ns/h", input({ current: 5, desired: 1, ...short }), T0 + 5_000).replicas).toBe(5);
    expect(h.normalize("ns/h", input({ current: 5, desired: 1, ...short }), T0 + 16_000).replicas).toBe(1);
    h.recordInitial("ns/g", 5, T0);
    h.forget("ns/g");
    expect(h.normalize("ns/g", input({ current: 5, desired: 1 }), T0 + 1).replicas).toBe(1);
  });
});

describe("with behavior", () => {
  const behavior = (b: Behavior): Behavior => b;

  it("Pods policy: at most that many added per period, counted from the scale events", () => {
    const h = new ScalingHistory();
    const b = behavior({ scaleUp: { policies: [{ type: "Pods", value: 2, periodSeconds: 60 }] } });
    h.recordInitial("k", 2, T0);
    const first = h.normalize("k", input({ behavior: b, current: 2, desired: 10 }), T0);
    expect([first.replicas, first.limited.reason, first.limited.status]).toEqual([4, "ScaleUpLimit", "True"]);
    h.storeScaleEvent("k", b, 2, 4, T0);
    // 2 added within the period: no more until it passes
    const second = h.normalize("k", input({ behavior: b, current: 4, desired: 10 }), T0 + 10_000);
    expect([second.replicas, second.limited.reason]).toEqual([4, "ScaleUpLimit"]);
    expect(h.normalize("k", input({ behavior: b, current: 4, desired: 10 }), T0 + 61_000).replicas).toBe(6);
  });

  it("Percent policy and selectPolicy: Max takes the biggest change, Min the smallest, Disabled none", () => {
    const policies = [
      { type: "Percent", value: 50, periodSeconds: 60 },
      { type: "Pods", value: 3, periodSeconds: 60 },
    ];
    const up = (selectPolicy: string) =>
      new ScalingHistory().normalize(
        "k",
        input({ behavior: { scaleUp: { selectPolicy, policies } }, current: 10, desired: 30, max: 50 }),
        T0,
      ).replicas;
    // 10 + 50% = 15, 10 + 3 = 13
    expect([up("Max"), up("Min"), up("Disabled")]).toEqual([15, 13, 10]);
    const down = (selectPolicy: string) =>
      new ScalingHistory().normalize(
        "k",
        input({
          behavior: { scaleDown: { selectPolicy, policies, stabilizationWindowSeconds: 0 } },
          current: 9,
          desired: 1,
        }),
        T0,
      );
    // 9 - 50% = 4 (rounded down), 9 - 3 = 6
    expect([down("Max").replicas, down("Min").replicas, down("Disabled").replicas]).toEqual([4, 6, 9]);
    expect(down("Max").limited).toEqual({
      status: "True",
      reason: "ScaleDownLimit",
      message: "the desired replica count is decreasing faster than the maximum scale rate",
    });
  });

  it("the defaults: scale-up 4 pods or 100% per 15 s, scale-down held for the default window then 100%", () => {
    const h = new ScalingHistory();
    h.recordInitial("k", 3, T0);
    // 3 + 4 pods beats 3 + 100%
    expect(h.normalize("k", input({ behavior: {}, current: 3, desired: 20, max: 30 }), T0).replicas).toBe(7);
    const held = h.normalize("k", input({ behavior: {}, current: 7, desired: 1 }), T0 + 60_000);
    expect([held.replicas, held.ableToScale.reason]).toEqual([7, "ScaleDownStabilized"]);
    expect(
      h.normalize("k", input({ behavior: {}, current: 7, desired: 1 }), T0 + 60_000 + FIVE_MIN + 1).replicas,
    ).toBe(1);
  });

  it("a scale-up stabilization window holds a rise to the lowest recent recommendation", () => {
    const h = new ScalingHistory();
    const b = behavior({ scaleUp: { stabilizationWindowSeconds: 60 } });
    h.recordInitial("k", 2, T0);
    const n = h.normalize("k", input({ behavior: b, current: 2, desired: 6 }), T0 + 10_000);
    expect(n).toMatchObject({
      replicas: 2,
      ableToScale: {
        reason: "ScaleUpStabilized",
        message:
          "recent recommendations were lower than current one, applying the lowest recent recommendation",
      },
    });
    expect(h.normalize("k", input({ behavior: b, current: 2, desired: 6 }), T0 + 75_000).replicas).toBe(6);
  });

  it("scale-down events widen the next scale-up's room within the period", () => {
    const h = new ScalingHistory();
    const b = behavior({
      scaleUp: { policies: [{ type: "Pods", value: 1, periodSeconds: 60 }] },
      scaleDown: { stabilizationWindowSeconds: 0, policies: [{ type: "Pods", value: 5, periodSeconds: 60 }] },
    });
    h.recordInitial("k", 8, T0);
    expect(h.normalize("k", input({ behavior: b, current: 8, desired: 3 }), T0).replicas).toBe(3);
    h.storeScaleEvent("k", b, 8, 3, T0);
    // the period started at 8: up to 8 + 1
    expect(
      h.normalize("k", input({ behavior: b, current: 3, desired: 20, max: 20 }), T0 + 1_000).replicas,
    ).toBe(9);
  });
});
