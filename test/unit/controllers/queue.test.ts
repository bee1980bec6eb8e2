import { describe, expect, it } from "vitest";
import { WorkQueue } from "../../../durable-objects/controllers/runtime/queue";

describe("WorkQueue.addAfter", () => {
  it("waits out a short delay, and does not fire at once for one past a timer's 32-bit range", async () => {
    const seen: string[] = [];
    const q = new WorkQueue("t", async (k) => {
      seen.push(k);
    });
    // a yearly CronJob's next run: over 2^31 ms away
    q.addAfter("next-year", 365 * 24 * 3600_000);
    q.addAfter("soon", 20);
    await new Promise((r) => setTimeout(r, 120));
    expect(seen).toEqual(["soon"]);
    q.addAfter("next-year", 1); // re-armed: the far timer is replaced
    await new Promise((r) => setTimeout(r, 50));
    expect(seen).toEqual(["soon", "next-year"]);
  });
});

describe("WorkQueue: a key added again while it runs", () => {
  it("runs again after a turn of the event loop, so timers and I/O go on meanwhile", async () => {
    let runs = 0;
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    const q = new WorkQueue("t", async (k) => {
      runs++;
      // a sync with nothing to wait on that wants another look at once (as a deadline not yet
      // reached does); in one chain of promises this would never let the interval run
      if (ticks < 3 && runs < 1000) q.add(k);
    });
    q.add("d");
    await q.idle();
    clearInterval(timer);
    expect(ticks).toBeGreaterThanOrEqual(3);
    expect(runs).toBeGreaterThanOrEqual(2);
    expect(runs).toBeLessThan(50);
  });
});
