// The Worker's entry: the apiserver app for HTTP, the cron trigger, and the Durable Object classes.
import { app } from "./app";
import { bootstrap, reconcileDefaults, wakeControlLoops } from "./bootstrap";
import type { Env } from "./env";

export { ControllerManager } from "../durable-objects/controllers/manager";
export { NodeTunnel } from "../durable-objects/node-tunnel/node-tunnel";
export { SchedulerObject } from "../durable-objects/scheduler/object";
export { StoreShard } from "../durable-objects/store/shard";

export default {
  fetch: app.fetch,
  async scheduled(_controller: ScheduledController, env: Env, ctx: ExecutionContext) {
    ctx.waitUntil(
      bootstrap(env)
        .then(() => reconcileDefaults(env))
        .then(() => wakeControlLoops(env)),
    );
  },
} satisfies ExportedHandler<Env>;
