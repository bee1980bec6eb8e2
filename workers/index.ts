// The Worker's entry: the apiserver app for HTTP, the cron trigger, and the Durable Object classes.

import { ControllerManager as ControllerManagerObject } from "../durable-objects/controllers/manager";
import type { Env } from "../durable-objects/env";
import { SchedulerObject as SchedulerObjectBase } from "../durable-objects/scheduler/object";
import { app } from "./app";
import { bootstrap, reconcileDefaults, wakeControlLoops } from "./bootstrap";
import { serveCluster } from "./clusters/route";
import { inProcessApiserver } from "./in-process-apiserver";

export { MetricsObject } from "../durable-objects/metrics/metrics-object";
export { NodeTunnel } from "../durable-objects/node-tunnel/node-tunnel";
export { StoreShard } from "../durable-objects/store/shard";

// The controller manager and the scheduler call the apiserver in process: the objects are
// given it here, at the top, so the durable-objects layer never imports the Worker.
export class ControllerManager extends ControllerManagerObject {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, inProcessApiserver);
  }
}

export class SchedulerObject extends SchedulerObjectBase {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, inProcessApiserver);
  }
}

export default {
  // /clusters/<name>/... is that cluster's; everything else the root's (docs/clusters.md)
  fetch: (req, env, ctx) => serveCluster(req, env, ctx, app.fetch),
  async scheduled(_controller: ScheduledController, env: Env, ctx: ExecutionContext) {
    ctx.waitUntil(
      bootstrap(env)
        .then(() => reconcileDefaults(env))
        .then(() => wakeControlLoops(env)),
    );
  },
} satisfies ExportedHandler<Env>;
