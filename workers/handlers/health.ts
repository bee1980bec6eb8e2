// /healthz, /livez and /readyz as kube-apiserver serves them. Every check runs: 200 "ok", or
// with ?verbose one line per check and "<endpoint> check passed"; a failing check makes it a
// 500 that names the check ("reason withheld": the reason goes to the log only), which is
// what probes read. ?exclude=<check> (repeatable) skips a check; /<endpoint>/<check> runs one.
// The checks are upstream's names: ping, log, and etcd, which here is the store: a store
// shard answers a read. Its result is kept for a second, as upstream rate-limits its etcd
// probe, so that probes never load the store.
import { notFoundPath } from "../../api/errors";
import { lookupKey } from "../../api/registry";
import type { Env } from "../../durable-objects/env";
import { Store } from "../../durable-objects/store/client";

export interface HealthCheck {
  name: string;
  /** Resolves when healthy; throws (any error) when not. */
  run(env: Env): Promise<void>;
}

const STORE_CHECK_MS = 1000;
/** The last settled store check (never a pending one: see signingKeys in authn/keys.ts). */
let lastStoreCheck: { at: number; error?: unknown } | undefined;

/** The namespaces shard reads an object: the store takes requests. */
export const storeCheck: HealthCheck = {
  name: "etcd",
  async run(env) {
    const now = Date.now();
    if (!lastStoreCheck || now - lastStoreCheck.at >= STORE_CHECK_MS) {
      let error: unknown;
      try {
        await new Store(env, lookupKey("/namespaces")).find("", "default");
      } catch (e) {
        error = e ?? new Error("store check failed");
      }
      lastStoreCheck = { at: now, error };
    }
    if (lastStoreCheck.error !== undefined) throw lastStoreCheck.error;
  },
};

const healthy = async () => {};
export const HEALTH_CHECKS: HealthCheck[] = [
  { name: "ping", run: healthy },
  // upstream: the log is being flushed; a Worker's console always takes lines
  { name: "log", run: healthy },
  storeCheck,
];

const TEXT = { "content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff" };

/** The answer to /<endpoint> (healthz, livez or readyz) with `url`'s query. */
export async function healthResponse(
  endpoint: string,
  url: URL,
  env: Env,
  checks: HealthCheck[] = HEALTH_CHECKS,
): Promise<Response> {
  const excluded = new Set(url.searchParams.getAll("exclude"));
  const results = await Promise.all(
    checks.map(async (c) => {
      if (excluded.delete(c.name)) return `[+]${c.name} excluded: ok`;
      try {
        await c.run(env);
        return `[+]${c.name} ok`;
      } catch (e) {
        console.error(`${endpoint} check ${c.name} failed: ${e instanceof Error ? e.message : String(e)}`);
        return `[-]${c.name} failed: reason withheld`;
      }
    }),
  );
  const failed = results.some((r) => r.startsWith("[-]"));
  if (excluded.size)
    results.push(
      `warn: some health checks cannot be excluded: no matches for ${[...excluded]
        .sort()
        .map((x) => `"${x}"`)
        .join(",")}`,
    );
  const body = results.map((l) => `${l}\n`).join("");
  if (failed) return new Response(`${body}${endpoint} check failed\n`, { status: 500, headers: TEXT });
  const verbose = url.searchParams.has("verbose");
  return new Response(verbose ? `${body}${endpoint} check passed\n` : "ok", { headers: TEXT });
}

/** The answer to /<endpoint>/<check>: that check alone; 404 for a check there is not. */
export async function healthCheckResponse(
  name: string,
  env: Env,
  checks: HealthCheck[] = HEALTH_CHECKS,
): Promise<Response> {
  const check = checks.find((c) => c.name === name);
  if (!check) throw notFoundPath();
  try {
    await check.run(env);
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e);
    return new Response(`internal server error: ${reason}\n`, { status: 500, headers: TEXT });
  }
  return new Response("ok", { headers: TEXT });
}
