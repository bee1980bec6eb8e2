// Waking the controllers and the scheduler after a shard's commits: one poke in flight per
// subscriber, and one more after it when commits came meanwhile, so a burst of writes costs
// a couple of calls, not one per write. The subscriber pulls the changes itself.

import type { ControllerManager } from "../controllers/manager";
import { SUBSCRIPTIONS, type Subscriber } from "../controllers/runtime/subscriptions";
import type { Env } from "../env";
import type { SchedulerObject } from "../scheduler/object";

const CUSTOM_SUBSCRIBERS: Subscriber[] = ["controllers"];

export class Pokes {
  private readonly state = new Map<Subscriber, { inflight: boolean; again: boolean }>();
  /**
   * One stub per subscriber, kept: each stub (and its id) is a runtime object freed only by
   * a full garbage collection, so making one per poke piles them up for it. A call that
   * fails drops it (a stub can stay broken after its object is reset).
   */
  private readonly stubs = new Map<Subscriber, DurableObjectStub<ControllerManager | SchedulerObject>>();

  constructor(
    private readonly env: Env,
    /** the shard's head revision, read when a poke goes out */
    private readonly head: () => number,
    /** the shard's number, when its resource is spread over several (store/shard-plan.ts) */
    private readonly shardNo: () => number,
  ) {}

  /** After commits to the resource `key`: wakes whoever subscribes to it. */
  wake(key: string): void {
    // a custom resource's shard wakes the controllers' garbage collector (its key holds a "#")
    for (const s of SUBSCRIPTIONS[key] ?? (key.includes("#") ? CUSTOM_SUBSCRIBERS : [])) this.poke(s, key);
  }

  private poke(s: Subscriber, key: string): void {
    let st = this.state.get(s);
    if (!st) this.state.set(s, (st = { inflight: false, again: false }));
    if (st.inflight) {
      st.again = true;
      return;
    }
    st.inflight = true;
    this.stub(s)
      .poke(key, this.head(), this.shardNo())
      .catch((e: unknown) => {
        this.stubs.delete(s);
        console.error(`poke ${s} failed`, e);
      })
      .finally(() => {
        st.inflight = false;
        if (st.again) {
          st.again = false;
          this.poke(s, key);
        }
      });
  }

  private stub(s: Subscriber): DurableObjectStub<ControllerManager | SchedulerObject> {
    let stub = this.stubs.get(s);
    if (!stub) {
      const name = this.env.EDGEPLANE_CLUSTER;
      stub =
        s === "controllers"
          ? this.env.CONTROLLERS.get(this.env.CONTROLLERS.idFromName(name))
          : this.env.SCHEDULER.get(this.env.SCHEDULER.idFromName(name));
      this.stubs.set(s, stub);
    }
    return stub;
  }
}
