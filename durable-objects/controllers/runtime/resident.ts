// Keeping a control loop's caches in memory. A Durable Object with no timer pending and
// nothing in flight is hibernated 10 s after its last request, which drops its memory: the
// next poke would rebuild every informer cache from full lists (with 10,000 pods, half a
// second of the one local thread, every quiet minute). A pending timer keeps the object in
// memory; it is then evicted only after 70-140 s without any request, and the cron calls it
// every minute. Upstream's controllers and scheduler keep their informers for the life of
// their process; this is the nearest a Durable Object gets.

const PERIOD_MS = 30_000;

/** Runs `tick` every 30 s from now on, which also keeps the object resident. */
export function stayResident(tick: () => void = () => {}): void {
  setInterval(tick, PERIOD_MS);
}
