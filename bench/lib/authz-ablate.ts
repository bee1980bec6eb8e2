// Per-plugin cost for the authz-chain benchmark: one server at a time with AlwaysAllow and
// only one admission plugin on, alternated with a baseline server that has none, both
// measured with the same pod creates. Says which plugin the full chain's extra time is in.

import { timedCreates } from "./authz-load";
import { type AuthzServer, startAuthzServer } from "./authz-server";
import { withGroupCpu } from "./cpu";
import type { Target } from "./http";
import { summarize } from "./stats";

export interface AblationRow {
  plugin: string;
  p50: number;
  p99: number;
  perSecond: number;
  workerdMsPerCreate: number;
  baseP50: number;
  baseP99: number;
  basePerSecond: number;
  baseWorkerdMsPerCreate: number;
  errors: number;
  firstError?: string;
}

export interface AblationOptions {
  /** plugin names as workers/admission/index.ts spells them */
  plugins: string[];
  /** the EDGEPLANE_ADMISSION_PLUGINS value that switches every plugin off */
  allOff: string;
  tokens: string[];
  userToken: string;
  namespace: string;
  /** makes the namespace (and what creates in it need) on a fresh server */
  prepare(admin: Target): Promise<void>;
  clients: number;
  count: number;
  seconds: number;
  rounds: number;
  log(s: string): void;
}

interface Acc {
  samples: number[];
  seconds: number;
  workerdMs: number;
  errors: number;
  firstError?: string;
}

const acc = (): Acc => ({ samples: [], seconds: 0, workerdMs: 0, errors: 0 });

async function measure(
  s: AuthzServer,
  ns: string,
  prefix: string,
  from: number,
  o: AblationOptions,
  into: Acc,
) {
  const { result, cpu } = await withGroupCpu(s.pgid, () =>
    timedCreates(s.user, ns, prefix, from, o.count, o.clients, o.seconds),
  );
  into.samples.push(...result.samples);
  into.seconds += result.seconds;
  into.workerdMs += cpu.workerd;
  into.errors += result.errors;
  into.firstError ??= result.firstError;
}

const figures = (a: Acc) => {
  const s = summarize(a.samples);
  return {
    p50: s.p50,
    p99: s.p99,
    perSecond: a.seconds > 0 ? s.n / a.seconds : Number.NaN,
    cpu: s.n > 0 ? a.workerdMs / s.n : Number.NaN,
  };
};

export async function ablatePlugins(o: AblationOptions): Promise<AblationRow[]> {
  const base = await startAuthzServer({
    tokens: o.tokens,
    userToken: o.userToken,
    vars: { EDGEPLANE_AUTHORIZATION_MODES: "AlwaysAllow", EDGEPLANE_ADMISSION_PLUGINS: o.allOff },
  });
  const rows: AblationRow[] = [];
  let baseNext = 0;
  try {
    await o.prepare(base.admin);
    await timedCreates(base.user, o.namespace, "warm", 0, 200, o.clients, 10);
    for (const plugin of o.plugins) {
      const vars = {
        EDGEPLANE_AUTHORIZATION_MODES: "AlwaysAllow",
        EDGEPLANE_ADMISSION_PLUGINS: `${o.allOff},${plugin}`,
      };
      o.log(`plugins: only ${plugin} on`);
      const s = await startAuthzServer({ tokens: o.tokens, userToken: o.userToken, vars });
      const mine = acc();
      const theirs = acc();
      try {
        await o.prepare(s.admin);
        await timedCreates(s.user, o.namespace, "warm", 0, 200, o.clients, 10);
        let next = 0;
        for (let r = 0; r < o.rounds; r++) {
          const order = r % 2 === 0 ? ["p", "b"] : ["b", "p"];
          for (const which of order) {
            if (which === "p") await measure(s, o.namespace, "p", (next += o.count), o, mine);
            else await measure(base, o.namespace, "b", (baseNext += o.count), o, theirs);
          }
        }
      } finally {
        await s.stop();
      }
      const m = figures(mine);
      const b = figures(theirs);
      const row: AblationRow = {
        plugin,
        p50: m.p50,
        p99: m.p99,
        perSecond: m.perSecond,
        workerdMsPerCreate: m.cpu,
        baseP50: b.p50,
        baseP99: b.p99,
        basePerSecond: b.perSecond,
        baseWorkerdMsPerCreate: b.cpu,
        errors: mine.errors,
        firstError: mine.firstError,
      };
      o.log(
        `plugins: ${plugin}: p50 ${m.p50.toFixed(1)} / ${b.p50.toFixed(1)} ms, p99 ${m.p99.toFixed(1)} / ${b.p99.toFixed(1)} ms, ` +
          `CPU ${m.cpu.toFixed(2)} / ${b.cpu.toFixed(2)} ms per create (only it / none)` +
          (mine.errors ? `, ${mine.errors} errors (${mine.firstError})` : ""),
      );
      rows.push(row);
    }
  } finally {
    await base.stop();
  }
  return rows;
}
