// Lazy one-time initialisation for Durable Objects: the first call runs `fn`, concurrent
// and later calls share its promise; a failure is forgotten so the next call retries.

export function once(fn: () => Promise<void>): () => Promise<void> {
  let started: Promise<void> | undefined;
  return () => {
    if (!started) {
      started = fn().catch((e) => {
        started = undefined;
        throw e;
      });
    }
    return started;
  };
}
