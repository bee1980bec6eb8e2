// The Worker's bindings (wrangler.toml [vars], secrets and Durable Object namespaces).
import type { ControllerManager } from "../durable-objects/controllers/manager";
import type { SchedulerObject } from "../durable-objects/scheduler/object";
import type { StoreShard } from "../durable-objects/store/shard";

export interface Env {
  STORE: DurableObjectNamespace<StoreShard>;
  CONTROLLERS: DurableObjectNamespace<ControllerManager>;
  SCHEDULER: DurableObjectNamespace<SchedulerObject>;
  EDGEPLANE_CLUSTER: string;
  EDGEPLANE_WATCH_WINDOW_SECONDS?: string;
  EDGEPLANE_WATCH_WINDOW_EVENTS?: string;
  /** Node lifecycle: seconds without a lease renewal before a node is NotReady (default 40). */
  EDGEPLANE_NODE_MONITOR_GRACE_SECONDS?: string;
  /** Seconds a pod stays on an unreachable node before eviction (default 300). */
  EDGEPLANE_DEFAULT_TOLERATION_SECONDS?: string;
  /** Authorization modes in order, comma separated (default "Node,RBAC"). */
  EDGEPLANE_AUTHORIZATION_MODES?: string;
  /** Static tokens, one per line as upstream's token file: token,user,uid,"group1,group2" (a secret). */
  EDGEPLANE_TOKENS?: string;
}
