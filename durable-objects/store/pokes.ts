// Waking the controllers and the scheduler after a shard's commits: one poke in flight per
// subscriber, and one more after it when commits came meanwhile, so a burst of writes costs
// a couple of calls, not one per write. The subscriber pulls the changes itself.
import type { Env } from "../../workers/env";
import { SUBSCRIPTIONS, type Subscriber } from "../controllers/runtime/subscriptions";

export class Pokes {
  private readonly state = new Map<Subscriber, { inflight: boolean; again: boolean }>();

  constructor(
    private readonly env: Env,
    /** the shard's head revision, read when a poke goes out */
    private readonly head: () => number,
  ) {}

  /** After commits to the resource `key`: wakes whoever subscribes to it. */
  wake(key: string): void {
    for (const s of SUBSCRIPTIONS[key] ?? []) this.poke(s, key);
  }

  private poke(s: Subscriber, key: string): void {
    let st = this.state.get(s);
    if (!st) this.state.set(s, (st = { inflight: false, again: false }));
    if (st.inflight) {
      st.again = true;
      return;
    }
    st.inflight = true;
    const ns = s === "controllers" ? this.env.CONTROLLERS : this.env.SCHEDULER;
    const stub = ns.get(ns.idFromName(this.env.EDGEPLANE_CLUSTER));
    stub
      .poke(key, this.head())
      .catch((e: unknown) => console.error(`poke ${s} failed`, e))
      .finally(() => {
        st.inflight = false;
        if (st.again) {
          st.again = false;
          this.poke(s, key);
        }
      });
  }
}
