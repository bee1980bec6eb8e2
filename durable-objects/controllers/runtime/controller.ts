// What a controller is (after sample-controller): watch handlers only turn changes into keys;
// sync(key) re-reads current state from the caches and drives toward the desired state.
import type { KubeObject } from "../../../api/types";
import type { ApiClient } from "./client";
import type { Informers } from "./informers";
import type { EventRecorder } from "./recorder";

export interface ControllerContext {
  informers: Informers;
  api: ApiClient;
  recorder: EventRecorder;
  /** queue a key of this controller again, now or after a delay (ms) */
  enqueue(key: string, afterMs?: number): void;
  now(): number;
}

export interface Controller {
  name: string;
  /** resource key ("apps/deployments", "/pods") -> the keys a change of that resource concerns */
  watches: Record<string, (obj: KubeObject, old: KubeObject | undefined, ctx: ControllerContext) => string[]>;
  /** every key to look at on a full resync (cron, cold start) */
  resync(ctx: ControllerContext): string[];
  sync(key: string, ctx: ControllerContext): Promise<void>;
  /** indexes the controller relies on, added before the first sync */
  setup?(ctx: ControllerContext): void;
  workers?: number;
}
