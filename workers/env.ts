// The Worker's bindings (wrangler.toml [vars], secrets and Durable Object namespaces).
import type { StoreShard } from "../durable-objects/store/shard";

export interface Env {
  STORE: DurableObjectNamespace<StoreShard>;
  EDGEPLANE_CLUSTER: string;
  EDGEPLANE_WATCH_WINDOW_SECONDS?: string;
  EDGEPLANE_WATCH_WINDOW_EVENTS?: string;
  /** Static tokens, one per line as upstream's token file: token,user,uid,"group1,group2" (a secret). */
  EDGEPLANE_TOKENS?: string;
}
