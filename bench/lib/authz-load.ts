// Pod creates for the authz-chain benchmark, keeping every latency sample so rounds of the
// same variant can be pooled before taking percentiles.
import { expectStatus, keepAliveAgent, request, type Target } from "./http";
import { podBody } from "./pods";

export interface CreateRun {
  /** latency of each successful create, ms */
  samples: number[];
  /** wall time of the run, s */
  seconds: number;
  errors: number;
  firstError?: string;
}

/**
 * Creates pods prefix-<from..from+count-1> in `ns` with `clients` concurrent keep-alive
 * clients; no create starts after maxSeconds.
 */
export async function timedCreates(
  t: Target,
  ns: string,
  prefix: string,
  from: number,
  count: number,
  clients: number,
  maxSeconds: number,
): Promise<CreateRun> {
  const agent = keepAliveAgent(clients);
  const out: CreateRun = { samples: [], seconds: 0, errors: 0 };
  const path = `/api/v1/namespaces/${ns}/pods`;
  let next = 0;
  const start = performance.now();
  const stopAt = start + maxSeconds * 1000;
  const loop = async () => {
    for (;;) {
      if (performance.now() > stopAt) return;
      const i = next++;
      if (i >= count) return;
      const n = from + i;
      const began = performance.now();
      try {
        await expectStatus(201, request(t, agent, "POST", path, podBody(`${prefix}-${n}`, n)), "create pod");
        out.samples.push(performance.now() - began);
      } catch (e) {
        out.errors++;
        out.firstError ??= e instanceof Error ? e.message : String(e);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: clients }, loop));
  } finally {
    agent.destroy();
  }
  out.seconds = (performance.now() - start) / 1000;
  return out;
}
