// The scheduling framework (after kube-scheduler's): plugins implement the
// extension points they need; each returns a Status (undefined = Success).
import type { Snapshot } from "./cache";
import type { NodeInfo } from "./nodeinfo";
import type { PodInfo } from "./podinfo";

export type Code = "Success" | "Error" | "Unschedulable" | "UnschedulableAndUnresolvable" | "Wait" | "Skip";

export class Status {
  constructor(
    public code: Code,
    public reasons: string[] = [],
    public plugin = "",
  ) {}

  message(): string {
    return this.reasons.join(", ");
  }

  isSuccess(): boolean {
    return this.code === "Success";
  }

  /** Unschedulable or UnschedulableAndUnresolvable. */
  isRejected(): boolean {
    return this.code === "Unschedulable" || this.code === "UnschedulableAndUnresolvable";
  }

  withPlugin(name: string): Status {
    if (!this.plugin) this.plugin = name;
    return this;
  }
}

/** undefined means Success throughout, so the hot path allocates nothing. */
export type MaybeStatus = Status | undefined;

export const SKIP = new Status("Skip");
export const unschedulable = (...reasons: string[]) => new Status("Unschedulable", reasons);
export const unresolvable = (...reasons: string[]) => new Status("UnschedulableAndUnresolvable", reasons);
export const errorStatus = (msg: string) => new Status("Error", [msg]);

export const MAX_NODE_SCORE = 100;

/** Per-cycle scratch space shared by the plugins of one scheduling attempt. */
export class CycleState {
  private data = new Map<string, unknown>();
  skipFilterPlugins = new Set<string>();
  skipScorePlugins = new Set<string>();

  constructor(
    public snapshot: Snapshot,
    public framework: Framework,
  ) {}

  read<T>(key: string): T | undefined {
    return this.data.get(key) as T | undefined;
  }

  write(key: string, value: unknown): void {
    this.data.set(key, value);
  }

  /** Shallow copy: plugins store immutable-ish state or implement clone(). */
  clone(): CycleState {
    const c = new CycleState(this.snapshot, this.framework);
    for (const [k, v] of this.data) {
      const cl = (v as { clone?: () => unknown } | null)?.clone;
      c.data.set(k, typeof cl === "function" ? cl.call(v) : v);
    }
    c.skipFilterPlugins = new Set(this.skipFilterPlugins);
    c.skipScorePlugins = new Set(this.skipScorePlugins);
    return c;
  }
}

/** Filter outcome per node name; nodes absent from the map share `absent`. */
export class NodeToStatus {
  map = new Map<string, Status>();
  absent: Status = new Status("UnschedulableAndUnresolvable");

  get(name: string): Status {
    return this.map.get(name) ?? this.absent;
  }

  set(name: string, s: Status): void {
    this.map.set(name, s);
  }
}

export interface NodeScore {
  name: string;
  score: number;
}

export interface PreFilterResult {
  /** Only these nodes can pass (null: all nodes). */
  nodeNames: Set<string> | null;
}

export interface PostFilterResult {
  nominatedNodeName: string;
  victims: PodInfo[];
}

export interface Plugin {
  name: string;
  preFilter?(state: CycleState, pod: PodInfo): MaybeStatus | PreFilterResult;
  /** PreFilter extensions: keep the pre-computed state right when pods are added/removed in a what-if. */
  preFilterAddPod?(state: CycleState, pod: PodInfo, toAdd: PodInfo, node: NodeInfo): void;
  preFilterRemovePod?(state: CycleState, pod: PodInfo, toRemove: PodInfo, node: NodeInfo): void;
  filter?(state: CycleState, pod: PodInfo, node: NodeInfo): MaybeStatus;
  postFilter?(
    state: CycleState,
    pod: PodInfo,
    statuses: NodeToStatus,
  ): { result?: PostFilterResult; status: MaybeStatus };
  preScore?(state: CycleState, pod: PodInfo, nodes: NodeInfo[]): MaybeStatus;
  score?(state: CycleState, pod: PodInfo, node: NodeInfo): number;
  normalizeScore?(state: CycleState, pod: PodInfo, scores: NodeScore[]): void;
  reserve?(state: CycleState, pod: PodInfo, nodeName: string): MaybeStatus;
  unreserve?(state: CycleState, pod: PodInfo, nodeName: string): void;
  permit?(state: CycleState, pod: PodInfo, nodeName: string): MaybeStatus;
  bind?(state: CycleState, pod: PodInfo, nodeName: string): MaybeStatus;
}

export type PluginFactory = (args?: Record<string, unknown>) => Plugin;

/** Plugin constructors by name. */
export class Registry {
  private factories = new Map<string, PluginFactory>();

  register(name: string, f: PluginFactory): void {
    if (this.factories.has(name)) throw new Error(`a plugin named ${name} already exists`);
    this.factories.set(name, f);
  }

  get(name: string): PluginFactory | undefined {
    return this.factories.get(name);
  }

  names(): string[] {
    return [...this.factories.keys()];
  }
}

export interface PluginConfig {
  name: string;
  /** Score weight; 0 or unset for plugins that do not score. */
  weight?: number;
  args?: Record<string, unknown>;
}

export interface Profile {
  schedulerName: string;
  plugins: PluginConfig[];
  /** 0: adaptive (upstream default). */
  percentageOfNodesToScore?: number;
}

/**
 * The upstream v1.32 default plugin set (MultiPoint, in order) with score
 * weights. Of the volume plugins only VolumeBinding is here (no volume limits,
 * restrictions or zones: nodes attach no cloud disks).
 */
export const DEFAULT_PLUGINS: PluginConfig[] = [
  { name: "PrioritySort" },
  { name: "NodeUnschedulable" },
  { name: "NodeName" },
  { name: "TaintToleration", weight: 3 },
  { name: "NodeAffinity", weight: 2 },
  { name: "NodePorts" },
  { name: "NodeResourcesFit", weight: 1 },
  { name: "VolumeBinding" },
  { name: "PodTopologySpread", weight: 2 },
  { name: "InterPodAffinity", weight: 2 },
  { name: "DefaultPreemption" },
  { name: "NodeResourcesBalancedAllocation", weight: 1 },
  { name: "ImageLocality", weight: 1 },
  { name: "DefaultBinder" },
];

export function defaultProfile(): Profile {
  return {
    schedulerName: "default-scheduler",
    plugins: DEFAULT_PLUGINS.map((p) => ({ ...p })),
    percentageOfNodesToScore: 0,
  };
}

/** A profile instantiated: plugins grouped by the extension points they implement. */
export class Framework {
  readonly plugins: Plugin[] = [];
  readonly preFilter: Plugin[] = [];
  readonly filter: Plugin[] = [];
  readonly postFilter: Plugin[] = [];
  readonly preScore: Plugin[] = [];
  readonly score: { plugin: Plugin; weight: number }[] = [];
  readonly reserve: Plugin[] = [];
  readonly permit: Plugin[] = [];
  readonly bind: Plugin[] = [];

  constructor(
    readonly profile: Profile,
    registry: Registry,
  ) {
    for (const cfg of profile.plugins) {
      const f = registry.get(cfg.name);
      if (!f) throw new Error(`plugin "${cfg.name}" does not exist`);
      const p = f(cfg.args);
      this.plugins.push(p);
      if (p.preFilter) this.preFilter.push(p);
      if (p.filter) this.filter.push(p);
      if (p.postFilter) this.postFilter.push(p);
      if (p.preScore) this.preScore.push(p);
      if (p.score) this.score.push({ plugin: p, weight: cfg.weight && cfg.weight > 0 ? cfg.weight : 1 });
      if (p.reserve || p.unreserve) this.reserve.push(p);
      if (p.permit) this.permit.push(p);
      if (p.bind) this.bind.push(p);
    }
  }

  /** Runs every PreFilter; a rejection or error stops the cycle. */
  runPreFilter(
    state: CycleState,
    pod: PodInfo,
  ): { status: MaybeStatus; nodeNames: Set<string> | null; plugins: string[] } {
    let nodeNames: Set<string> | null = null;
    const restricting: string[] = [];
    for (const p of this.preFilter) {
      const r = p.preFilter!(state, pod);
      if (r === undefined) continue;
      if (r instanceof Status) {
        if (r.code === "Skip") {
          state.skipFilterPlugins.add(p.name);
          continue;
        }
        if (r.code === "Success") continue;
        return { status: r.withPlugin(p.name), nodeNames: null, plugins: [] };
      }
      const names: Set<string> | null = r.nodeNames;
      if (names) {
        restricting.push(p.name);
        const prev: Set<string> | null = nodeNames;
        nodeNames = prev
          ? new Set<string>([...prev].filter((n: string) => names.has(n)))
          : new Set<string>(names);
        if (nodeNames.size === 0) {
          const msg =
            restricting.length > 1
              ? `node(s) didn't satisfy plugin(s) [${restricting.sort().join(" ")}] simultaneously`
              : `node(s) didn't satisfy plugin ${p.name}`;
          return { status: unresolvable(msg).withPlugin(p.name), nodeNames: null, plugins: restricting };
        }
      }
    }
    return { status: undefined, nodeNames, plugins: restricting };
  }

  /** Filter plugins in order; the first non-success status is the node's verdict. */
  runFilter(state: CycleState, pod: PodInfo, node: NodeInfo): MaybeStatus {
    const fs = this.filter;
    for (let i = 0; i < fs.length; i++) {
      const p = fs[i];
      if (state.skipFilterPlugins.size > 0 && state.skipFilterPlugins.has(p.name)) continue;
      const s = p.filter!(state, pod, node);
      if (s !== undefined && s.code !== "Success") {
        if (s.code === "Skip") continue;
        return s.withPlugin(p.name);
      }
    }
    return undefined;
  }

  runPreFilterAddPod(state: CycleState, pod: PodInfo, toAdd: PodInfo, node: NodeInfo): void {
    for (const p of this.preFilter) {
      if (!state.skipFilterPlugins.has(p.name)) p.preFilterAddPod?.(state, pod, toAdd, node);
    }
  }

  runPreFilterRemovePod(state: CycleState, pod: PodInfo, toRemove: PodInfo, node: NodeInfo): void {
    for (const p of this.preFilter) {
      if (!state.skipFilterPlugins.has(p.name)) p.preFilterRemovePod?.(state, pod, toRemove, node);
    }
  }

  runPostFilter(
    state: CycleState,
    pod: PodInfo,
    statuses: NodeToStatus,
  ): { result?: PostFilterResult; status: Status } {
    const reasons: string[] = [];
    for (const p of this.postFilter) {
      const r = p.postFilter!(state, pod, statuses);
      if (r.status === undefined || r.status.code === "Success")
        return { result: r.result, status: new Status("Success", [], p.name) };
      if (r.status.code !== "Unschedulable" && r.status.code !== "UnschedulableAndUnresolvable") {
        return { status: r.status.withPlugin(p.name) };
      }
      reasons.push(...r.status.reasons);
      if (r.result) return { result: r.result, status: new Status("Unschedulable", reasons, p.name) };
    }
    return { status: new Status("Unschedulable", reasons) };
  }

  runReserve(state: CycleState, pod: PodInfo, nodeName: string): MaybeStatus {
    for (const p of this.reserve) {
      const s = p.reserve?.(state, pod, nodeName);
      if (s && !s.isSuccess()) return s.withPlugin(p.name);
    }
    return undefined;
  }

  runUnreserve(state: CycleState, pod: PodInfo, nodeName: string): void {
    for (let i = this.reserve.length - 1; i >= 0; i--) this.reserve[i].unreserve?.(state, pod, nodeName);
  }

  runPermit(state: CycleState, pod: PodInfo, nodeName: string): MaybeStatus {
    for (const p of this.permit) {
      const s = p.permit!(state, pod, nodeName);
      if (s && !s.isSuccess() && s.code !== "Skip") return s.withPlugin(p.name);
    }
    return undefined;
  }
}

/** Scales scores to 0..MAX_NODE_SCORE by the maximum; `reverse` flips them. */
export function defaultNormalizeScore(maxPriority: number, reverse: boolean, scores: NodeScore[]): void {
  let max = 0;
  for (const s of scores) if (s.score > max) max = s.score;
  if (max === 0) {
    if (reverse) for (const s of scores) s.score = maxPriority;
    return;
  }
  for (const s of scores) {
    let v = Math.trunc((maxPriority * s.score) / max);
    if (reverse) v = maxPriority - v;
    s.score = v;
  }
}
