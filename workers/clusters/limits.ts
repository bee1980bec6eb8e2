// A cluster's request rate limit (spec.limits.requestsPerSecond on its Cluster object; docs/
// clusters.md): a token bucket per cluster and isolate, one second of requests deep. Past
// it a request gets upstream's 429 TooManyRequests with Retry-After, as the apiserver's
// max-in-flight filter answers, before it reaches the cluster's objects.
import { StatusError } from "../../api/errors";

interface Bucket {
  rate: number;
  tokens: number;
  at: number;
}

const buckets = new Map<string, Bucket>();

/** Takes one request from cluster `key`'s bucket; throws 429 when it is empty. */
export function takeRequest(key: string, rate: number | undefined, now = Date.now()): void {
  if (!rate || rate <= 0) {
    buckets.delete(key);
    return;
  }
  let b = buckets.get(key);
  if (!b || b.rate !== rate) buckets.set(key, (b = { rate, tokens: rate, at: now }));
  b.tokens = Math.min(rate, b.tokens + ((now - b.at) / 1000) * rate);
  b.at = now;
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return;
  }
  throw new StatusError(429, "TooManyRequests", "Too many requests, please try again later.", {
    retryAfterSeconds: 1,
  });
}
