// Public surface of the scheduler (pure TypeScript; the Durable Object wires it).

export { mustParseQuantity as parseQuantity, parseMilli, parseValue } from "../../api/quantity";
export { normalizeImageName, SchedulerCache, Snapshot } from "./cache";
export * from "./events";
export { ERR_NO_NODES_AVAILABLE, FitError } from "./fiterror";
export {
  CycleState,
  DEFAULT_PLUGINS,
  defaultProfile,
  Framework,
  NodeToStatus,
  type Plugin,
  type PluginConfig,
  type Profile,
  Registry,
  Status,
} from "./framework";
export { type SchedulingAction, SchedulingLoop, type WatchType } from "./loop";
export { NodeInfo } from "./nodeinfo";
export { defaultRegistry } from "./plugins/index";
export { newPodInfo, type PodInfo, podKey } from "./podinfo";
export { type QueuedPodInfo, SchedulingQueue } from "./queue";
export {
  numFeasibleNodesToFind,
  type ScheduleOutcome,
  Scheduler,
  schedulePod,
  selectHost,
} from "./scheduler";
