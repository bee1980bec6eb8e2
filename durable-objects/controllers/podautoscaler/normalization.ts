// From the count the metrics ask for to the count the HPA sets (upstream's normalization):
// the history of recent recommendations stabilizes it (the highest of the downscale window
// without behavior; with behavior, between the lowest of the scale-up window and the highest
// of the scale-down window), then it is held within [minReplicas, maxReplicas] and a rate:
// without behavior at most twice the current count (at least 4), with behavior the Pods and
// Percent policies over their periods (selectPolicy Max, Min or Disabled), counted from the
// scale events of those periods. Each result carries the AbleToScale and ScalingLimited
// reasons upstream sets. The history is the controller's memory, per HPA key, as upstream's.

export interface ScalingPolicy {
  type: "Pods" | "Percent" | string;
  value: number;
  periodSeconds: number;
}

export interface ScalingRules {
  stabilizationWindowSeconds?: number | null;
  selectPolicy?: "Max" | "Min" | "Disabled" | string | null;
  policies?: ScalingPolicy[] | null;
}

export interface Behavior {
  scaleUp?: ScalingRules | null;
  scaleDown?: ScalingRules | null;
}

/** Rules with every field set. */
export interface ResolvedRules {
  stabilizationWindowSeconds: number;
  selectPolicy: string;
  policies: ScalingPolicy[];
}

interface Recommendation {
  replicas: number;
  at: number;
}

interface ScaleEvent {
  change: number;
  at: number;
  outdated: boolean;
}

export interface Normalized {
  replicas: number;
  /** AbleToScale (True) reason and message */
  ableToScale: { reason: string; message: string };
  /** ScalingLimited status, reason and message */
  limited: { status: "True" | "False"; reason: string; message: string };
}

export interface NormalizeInput {
  behavior: Behavior | null | undefined;
  current: number;
  /** what the metrics ask for */
  desired: number;
  min: number;
  max: number;
  /** the default scale-down stabilization (--horizontal-pod-autoscaler-downscale-stabilization) */
  downscaleStabilizationMs: number;
}

// without behavior: at most this factor of the current count, but always up to this many
const SCALE_UP_FACTOR = 2;
const SCALE_UP_MINIMUM = 4;
const SCALE_UP_RULES: ResolvedRules = {
  stabilizationWindowSeconds: 0,
  selectPolicy: "Max",
  policies: [
    { type: "Pods", value: 4, periodSeconds: 15 },
    { type: "Percent", value: 100, periodSeconds: 15 },
  ],
};
const SCALE_DOWN_POLICIES: ScalingPolicy[] = [{ type: "Percent", value: 100, periodSeconds: 15 }];

const READY = { reason: "ReadyForNewScale", message: "recommended size matches current size" };
const DOWN_STABILIZED = {
  reason: "ScaleDownStabilized",
  message: "recent recommendations were higher than current one, applying the highest recent recommendation",
};
const UP_STABILIZED = {
  reason: "ScaleUpStabilized",
  message: "recent recommendations were lower than current one, applying the lowest recent recommendation",
};
const WITHIN = { reason: "DesiredWithinRange", message: "the desired count is within the acceptable range" };
const UP_LIMIT = {
  reason: "ScaleUpLimit",
  message: "the desired replica count is increasing faster than the maximum scale rate",
};
const TOO_MANY = {
  reason: "TooManyReplicas",
  message: "the desired replica count is more than the maximum replica count",
};
const DOWN_LIMIT = {
  reason: "ScaleDownLimit",
  message: "the desired replica count is decreasing faster than the maximum scale rate",
};
const TOO_FEW = {
  reason: "TooFewReplicas",
  message: "the desired replica count is less than the minimum replica count",
};

/** Behavior's rules with upstream's defaults for what is unset (the apiserver sets them too). */
export function rulesOf(
  behavior: Behavior,
  downscaleStabilizationMs: number,
): { up: ResolvedRules; down: ResolvedRules } {
  const up = behavior.scaleUp ?? {};
  const down = behavior.scaleDown ?? {};
  return {
    up: {
      stabilizationWindowSeconds: up.stabilizationWindowSeconds ?? SCALE_UP_RULES.stabilizationWindowSeconds,
      selectPolicy: up.selectPolicy ?? SCALE_UP_RULES.selectPolicy,
      policies: up.policies ?? SCALE_UP_RULES.policies,
    },
    down: {
      stabilizationWindowSeconds:
        down.stabilizationWindowSeconds ?? Math.trunc(downscaleStabilizationMs / 1000),
      selectPolicy: down.selectPolicy ?? "Max",
      policies: down.policies ?? SCALE_DOWN_POLICIES,
    },
  };
}

/** Replicas added (or removed) by the events of the last `periodSeconds`. */
function changeWithin(periodSeconds: number, events: ScaleEvent[], now: number): number {
  const cutoff = now - periodSeconds * 1000;
  let sum = 0;
  for (const e of events) if (e.at > cutoff) sum += e.change;
  return sum;
}

/** The most replicas the scale-up rules allow now. */
export function scaleUpLimit(
  current: number,
  ups: ScaleEvent[],
  downs: ScaleEvent[],
  rules: ResolvedRules,
  now: number,
): number {
  if (rules.selectPolicy === "Disabled") return current;
  const pickMin = rules.selectPolicy === "Min";
  let result = pickMin ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY;
  for (const p of rules.policies) {
    const start =
      current - changeWithin(p.periodSeconds, ups, now) + changeWithin(p.periodSeconds, downs, now);
    const proposed =
      p.type === "Pods" ? start + p.value : p.type === "Percent" ? Math.ceil(start * (1 + p.value / 100)) : 0;
    result = pickMin ? Math.min(result, proposed) : Math.max(result, proposed);
  }
  return result;
}

/** The fewest replicas the scale-down rules allow now. */
export function scaleDownLimit(
  current: number,
  ups: ScaleEvent[],
  downs: ScaleEvent[],
  rules: ResolvedRules,
  now: number,
): number {
  if (rules.selectPolicy === "Disabled") return current;
  // the smallest change (Min) is the highest count
  const pickMax = rules.selectPolicy === "Min";
  let result = pickMax ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  for (const p of rules.policies) {
    const start =
      current - changeWithin(p.periodSeconds, ups, now) + changeWithin(p.periodSeconds, downs, now);
    const proposed =
      p.type === "Pods"
        ? start - p.value
        : p.type === "Percent"
          ? Math.trunc(start * (1 - p.value / 100))
          : 0;
    result = pickMax ? Math.max(result, proposed) : Math.min(result, proposed);
  }
  return result;
}

/** Recommendations and scale events per HPA key: what upstream's controller keeps in memory. */
export class ScalingHistory {
  private recommendations = new Map<string, Recommendation[]>();
  private ups = new Map<string, ScaleEvent[]>();
  private downs = new Map<string, ScaleEvent[]>();

  /** The HPA is gone: its history goes too. */
  forget(key: string): void {
    this.recommendations.delete(key);
    this.ups.delete(key);
    this.downs.delete(key);
  }

  /** The first look at an HPA records its current count as a recommendation. */
  recordInitial(key: string, current: number, now: number): void {
    if (!this.recommendations.has(key)) this.recommendations.set(key, [{ replicas: current, at: now }]);
  }

  /** Records a recommendation, reusing a slot that fell out of every window. */
  private record(key: string, replicas: number, now: number, oldIndex: number): void {
    const list = this.recommendations.get(key) ?? [];
    if (oldIndex >= 0) list[oldIndex] = { replicas, at: now };
    else list.push({ replicas, at: now });
    this.recommendations.set(key, list);
  }

  /** The count to set for `input`, with its conditions. */
  normalize(key: string, input: NormalizeInput, now: number): Normalized {
    return input.behavior
      ? this.withBehavior(key, input, input.behavior, now)
      : this.withoutBehavior(key, input, now);
  }

  private withoutBehavior(key: string, input: NormalizeInput, now: number): Normalized {
    const cutoff = now - input.downscaleStabilizationMs;
    let stabilized = input.desired;
    let old = -1;
    (this.recommendations.get(key) ?? []).forEach((r, i) => {
      if (r.at < cutoff) old = i;
      else if (r.replicas > stabilized) stabilized = r.replicas;
    });
    this.record(key, input.desired, now, old);
    const ableToScale = stabilized !== input.desired ? DOWN_STABILIZED : READY;
    const upLimit = Math.max(SCALE_UP_FACTOR * input.current, SCALE_UP_MINIMUM);
    const [ceiling, over] = input.max > upLimit ? [upLimit, UP_LIMIT] : [input.max, TOO_MANY];
    let replicas = stabilized;
    let why = WITHIN;
    if (stabilized < input.min) [replicas, why] = [input.min, TOO_FEW];
    else if (stabilized > ceiling) [replicas, why] = [ceiling, over];
    return { replicas, ableToScale, limited: { status: replicas === stabilized ? "False" : "True", ...why } };
  }

  private withBehavior(key: string, input: NormalizeInput, behavior: Behavior, now: number): Normalized {
    const { up, down } = rulesOf(behavior, input.downscaleStabilizationMs);
    const upCutoff = now - up.stabilizationWindowSeconds * 1000;
    const downCutoff = now - down.stabilizationWindowSeconds * 1000;
    let upRec = input.desired;
    let downRec = input.desired;
    let old = -1;
    (this.recommendations.get(key) ?? []).forEach((r, i) => {
      if (r.at > upCutoff) upRec = Math.min(upRec, r.replicas);
      if (r.at > downCutoff) downRec = Math.max(downRec, r.replicas);
      if (r.at < upCutoff && r.at < downCutoff) old = i;
    });
    // within [lowest of the scale-up window, highest of the scale-down window], from the current count
    let stabilized = input.current;
    if (stabilized < upRec) stabilized = upRec;
    if (stabilized > downRec) stabilized = downRec;
    this.record(key, input.desired, now, old);
    const ableToScale =
      stabilized === input.desired ? READY : input.desired >= input.current ? UP_STABILIZED : DOWN_STABILIZED;

    const ups = this.ups.get(key) ?? [];
    const downs = this.downs.get(key) ?? [];
    let replicas = stabilized;
    let why = WITHIN;
    if (stabilized > input.current) {
      const limit = Math.max(scaleUpLimit(input.current, ups, downs, up, now), input.current);
      const [ceiling, over] = input.max > limit ? [limit, UP_LIMIT] : [input.max, TOO_MANY];
      if (stabilized > ceiling) [replicas, why] = [ceiling, over];
    } else if (stabilized < input.current) {
      const limit = Math.min(scaleDownLimit(input.current, ups, downs, down, now), input.current);
      const [floor, under] = input.min < limit ? [limit, DOWN_LIMIT] : [input.min, TOO_FEW];
      if (stabilized < floor) [replicas, why] = [floor, under];
    }
    return { replicas, ableToScale, limited: { status: replicas === stabilized ? "False" : "True", ...why } };
  }

  /** After a rescale with behavior: the change counts against the policies' periods. */
  storeScaleEvent(
    key: string,
    behavior: Behavior | null | undefined,
    prev: number,
    next: number,
    now: number,
  ): void {
    if (!behavior) return;
    const { up, down } = rulesOf(behavior, 0);
    const growing = next > prev;
    const rules = growing ? up : down;
    const map = growing ? this.ups : this.downs;
    const longest = Math.max(0, ...rules.policies.map((p) => p.periodSeconds));
    const cutoff = now - longest * 1000;
    const list = map.get(key) ?? [];
    let old = -1;
    list.forEach((e, i) => {
      if (e.at < cutoff) e.outdated = true;
      if (e.outdated) old = i;
    });
    const event = { change: Math.abs(next - prev), at: now, outdated: false };
    if (old >= 0) list[old] = event;
    else list.push(event);
    map.set(key, list);
  }
}
