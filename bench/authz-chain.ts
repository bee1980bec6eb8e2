// authz-chain: what authentication, authorization and admission add to a pod create.
//   FULL:    default modes (Node,RBAC), default admission plugins, 1,000 Roles + 1,000
//            RoleBindings over 50 namespaces, pods created by a non-admin token user that one
//            RoleBinding allows.
//   REDUCED: EDGEPLANE_AUTHORIZATION_MODES=AlwaysAllow and every admission plugin disabled,
//            same token user, same RBAC objects, same pod bodies.
//   Also FULL as the admin (system:masters skips the authorizers but not admission), which
//   splits the difference into its authorization and its admission parts.
// Both servers run side by side; rounds alternate between them (A/B/A/B...) so drift in the
// machine's load hits both alike. Prints a table; writes .edgeplane/bench/authz-chain.json.
//
//   npm run bench authz-chain   (or: node --import tsx bench/authz-chain.ts)
//   node --import tsx bench/authz-chain.ts --plugins   (each admission plugin alone vs none;
//   writes .edgeplane/bench/authz-chain-plugins.json; BENCH_AUTHZ_PLUGINS=A,B picks plugins)
// Knobs: BENCH_AUTHZ_ROUNDS (default 8), BENCH_AUTHZ_ROLES (default 1000), BENCH_LIVE_TREE=1.
import { cpus, loadavg } from "node:os";
import { pathToFileURL } from "node:url";
import { createPods } from "./lib/apiserver";
import { ablatePlugins } from "./lib/authz-ablate";
import { timedCreates } from "./lib/authz-load";
import { type AuthzServer, startAuthzServer } from "./lib/authz-server";
import { grantPodCreate, populateRbac } from "./lib/authz-setup";
import { withGroupCpu } from "./lib/cpu";
import { expectStatus, keepAliveAgent, request, type Target } from "./lib/http";
import { type Row, table, writeResults } from "./lib/report";
import { ratio, summarize } from "./lib/stats";

const BENCH_USER = "bench-user";
const BENCH_TOKEN = "benchtok";
const TOKEN_LINE = `${BENCH_TOKEN},${BENCH_USER},u-bench,bench-group`;
const NAMESPACES = Array.from({ length: 50 }, (_, i) => (i === 0 ? "authz-bench" : `authz-ns-${i}`));
const BENCH_NS = NAMESPACES[0] as string;
const ROLES = Number(process.env.BENCH_AUTHZ_ROLES ?? 1000);
const ROUNDS = Number(process.env.BENCH_AUTHZ_ROUNDS ?? 8);
/** Per round and variant: creates with 1 and with 50 clients, each capped in time too. */
const PHASES = [
  { clients: 1, count: 200, seconds: 5 },
  { clients: 50, count: 1000, seconds: 8 },
];

/** Every admission plugin switched off (the names in workers/admission/index.ts). */
export const ALL_PLUGINS_OFF = [
  "NamespaceLifecycle",
  "Initializers",
  "ServiceAccount",
  "DefaultTolerationSeconds",
  "LimitRanger",
  "SecurityContextDeny",
  "PodSecurity",
  "NodeRestriction+RBACEscalation",
  "CertificateApproval+CertificateSigning+CertificateSubjectRestriction",
  "MutatingAdmissionWebhook",
  "ValidatingAdmissionPolicy",
  "ValidatingAdmissionWebhook",
  "ResourceQuota",
]
  .map((p) => `-${p}`)
  .join(",");

const t0 = performance.now();
const log = (s: string) => console.log(`[${((performance.now() - t0) / 1000).toFixed(1)}s] ${s}`);

interface Variant {
  key: string;
  label: string;
  server: () => AuthzServer;
  target: (s: AuthzServer) => Target;
}

interface Samples {
  latency: number[];
  done: number;
  seconds: number;
  errors: number;
  firstError?: string;
  workerdMs: number;
  /** each round's own p99, ms (paired with the other variants' of the same round) */
  roundP99: number[];
}

const emptySamples = (): Samples => ({
  latency: [],
  done: 0,
  seconds: 0,
  errors: 0,
  workerdMs: 0,
  roundP99: [],
});

function median(xs: number[]): number {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return Number.NaN;
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? (v[mid] as number) : ((v[mid - 1] as number) + (v[mid] as number)) / 2;
}

/** The median over rounds of a's p99 / b's p99 in the same round: steadier than pooled p99 on a noisy machine. */
function pairedP99Ratio(a: Samples, b: Samples): number {
  return ratio(median(a.roundP99.map((x, i) => x / (b.roundP99[i] ?? Number.NaN))), 1);
}

/** The bench namespace's default ServiceAccount, so the ServiceAccount plugin never waits for it. */
async function ensureDefaultAccount(admin: Target): Promise<void> {
  const agent = keepAliveAgent(1);
  const body = JSON.stringify({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "default" } });
  await expectStatus(
    [201, 409],
    request(admin, agent, "POST", `/api/v1/namespaces/${BENCH_NS}/serviceaccounts`, body),
    "default serviceaccount",
  );
  agent.destroy();
}

async function prepare(name: string, s: AuthzServer): Promise<void> {
  log(`${name}: ${NAMESPACES.length} namespaces, ${ROLES} Roles + ${ROLES} RoleBindings`);
  const r = await populateRbac(s.admin, { namespaces: NAMESPACES, roles: ROLES });
  if (r.errors > 0) throw new Error(`${name}: RBAC population failed: ${r.firstError}`);
  log(`${name}: ${r.done} RBAC objects at ${r.perSecond.toFixed(0)}/s`);
  await grantPodCreate(s.admin, BENCH_NS, BENCH_USER);
  await ensureDefaultAccount(s.admin);
  // the grant must be in force before measuring (RBAC snapshots may lag a write a little)
  const deadline = Date.now() + 15000;
  for (let i = 0; ; i++) {
    const agent = keepAliveAgent(1);
    const probe = await request(
      s.user,
      agent,
      "POST",
      `/api/v1/namespaces/${BENCH_NS}/pods?dryRun=All`,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: `probe-${i}` },
        spec: { containers: [{ name: "c", image: "nginx:1.27" }], schedulerName: "edgeplane-bench-none" },
      }),
    );
    agent.destroy();
    if (probe.status === 201) break;
    if (Date.now() > deadline)
      throw new Error(`${name}: bench-user cannot create pods: ${probe.body.slice(0, 300)}`);
    await new Promise((res) => setTimeout(res, 250));
  }
}

export async function runAuthzChain(): Promise<Record<string, number>> {
  const loadBefore = loadavg() as [number, number, number];
  log(`machine: ${cpus().length} CPUs, load average ${loadBefore.map((l) => l.toFixed(2)).join(" ")}`);
  const servers: { full?: AuthzServer; reduced?: AuthzServer } = {};
  try {
    log("FULL: starting the control plane (Node,RBAC; default admission)");
    servers.full = await startAuthzServer({ tokens: [TOKEN_LINE], userToken: BENCH_TOKEN });
    log("REDUCED: starting the control plane (AlwaysAllow; no admission plugins)");
    servers.reduced = await startAuthzServer({
      tokens: [TOKEN_LINE],
      userToken: BENCH_TOKEN,
      vars: { EDGEPLANE_AUTHORIZATION_MODES: "AlwaysAllow", EDGEPLANE_ADMISSION_PLUGINS: ALL_PLUGINS_OFF },
    });
    const full = servers.full;
    const reduced = servers.reduced;
    await prepare("FULL", full);
    await prepare("REDUCED", reduced);
    const variants: Variant[] = [
      { key: "full", label: "FULL (bench-user)", server: () => full, target: (s) => s.user },
      { key: "reduced", label: "REDUCED (bench-user)", server: () => reduced, target: (s) => s.user },
      { key: "full_admin", label: "FULL as admin (no authz)", server: () => full, target: (s) => s.admin },
    ];
    log("warm-up: 200 creates, 50 clients, per variant (not reported)");
    for (const v of variants)
      await createPods(v.target(v.server()), BENCH_NS, `warm-${v.key.replace("_", "-")}`, 0, 200, 50, 10);
    const samples = new Map<string, Samples>();
    for (const v of variants) for (const p of PHASES) samples.set(`${v.key}_c${p.clients}`, emptySamples());
    const next = new Map<string, number>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const p of PHASES) {
        // A/B/A/B: the order within a round flips every round, so a trend favours nobody
        const order = round % 2 === 0 ? variants : [...variants].reverse();
        for (const v of order) {
          const s = v.server();
          const from = next.get(v.key) ?? 0;
          const { result, cpu } = await withGroupCpu(s.pgid, () =>
            timedCreates(
              v.target(s),
              BENCH_NS,
              `b-${v.key.replace("_", "-")}`,
              from,
              p.count,
              p.clients,
              p.seconds,
            ),
          );
          next.set(v.key, from + p.count);
          const acc = samples.get(`${v.key}_c${p.clients}`) as Samples;
          acc.latency.push(...result.samples);
          acc.done += result.samples.length;
          acc.seconds += result.seconds;
          acc.errors += result.errors;
          acc.firstError ??= result.firstError;
          acc.workerdMs += cpu.workerd;
          const sum = summarize(result.samples);
          acc.roundP99.push(sum.p99);
          log(
            `round ${round + 1}/${ROUNDS} ${v.label} c${p.clients}: ${sum.n} creates, ` +
              `${(sum.n / result.seconds).toFixed(0)}/s, p50 ${sum.p50.toFixed(1)} ms, ` +
              `p99 ${sum.p99.toFixed(1)} ms, workerd ${(cpu.workerd / Math.max(1, sum.n)).toFixed(2)} ms CPU/create` +
              (result.errors ? `, ${result.errors} errors (${result.firstError})` : ""),
          );
        }
      }
    }
    return report(variants, samples, loadBefore);
  } finally {
    log("stopping servers");
    await servers.full?.stop();
    await servers.reduced?.stop();
  }
}

function report(
  variants: Variant[],
  samples: Map<string, Samples>,
  loadBefore: number[],
): Record<string, number> {
  const m: Record<string, number> = {};
  const rows: Row[] = [];
  for (const p of PHASES) {
    for (const v of variants) {
      const s = samples.get(`${v.key}_c${p.clients}`) as Samples;
      const k = `${v.key}_c${p.clients}`;
      const sum = summarize(s.latency);
      const rate = s.seconds > 0 ? s.done / s.seconds : Number.NaN;
      const cpuPer = s.done > 0 ? s.workerdMs / s.done : Number.NaN;
      m[`${k}_p50_ms`] = sum.p50;
      m[`${k}_p99_ms`] = sum.p99;
      m[`${k}_per_s`] = rate;
      m[`${k}_creates`] = s.done;
      m[`${k}_errors`] = s.errors;
      m[`${k}_workerd_cpu_ms_per_create`] = cpuPer;
      rows.push([`${v.label} c${p.clients}`, s.done, sum.p50, sum.p99, rate, cpuPer, s.errors]);
    }
  }
  for (const p of PHASES) {
    const c = `c${p.clients}`;
    m[`ratio_full_vs_reduced_${c}_p99`] = ratio(
      m[`full_${c}_p99_ms`] as number,
      m[`reduced_${c}_p99_ms`] as number,
    );
    m[`ratio_full_vs_reduced_${c}_p50`] = ratio(
      m[`full_${c}_p50_ms`] as number,
      m[`reduced_${c}_p50_ms`] as number,
    );
    m[`ratio_full_vs_reduced_${c}_per_s`] = ratio(
      m[`full_${c}_per_s`] as number,
      m[`reduced_${c}_per_s`] as number,
    );
    m[`ratio_full_vs_reduced_${c}_workerd_cpu`] = ratio(
      m[`full_${c}_workerd_cpu_ms_per_create`] as number,
      m[`reduced_${c}_workerd_cpu_ms_per_create`] as number,
    );
    const get = (k: string) => samples.get(`${k}_${c}`) as Samples;
    m[`ratio_full_vs_reduced_${c}_p99_median_of_rounds`] = pairedP99Ratio(get("full"), get("reduced"));
    m[`ratio_full_vs_full_admin_${c}_p99_median_of_rounds`] = pairedP99Ratio(get("full"), get("full_admin"));
    m[`ratio_full_admin_vs_reduced_${c}_p99_median_of_rounds`] = pairedP99Ratio(
      get("full_admin"),
      get("reduced"),
    );
    m[`ratio_full_vs_full_admin_${c}_p99`] = ratio(
      m[`full_${c}_p99_ms`] as number,
      m[`full_admin_${c}_p99_ms`] as number,
    );
    m[`ratio_full_admin_vs_reduced_${c}_p99`] = ratio(
      m[`full_admin_${c}_p99_ms`] as number,
      m[`reduced_${c}_p99_ms`] as number,
    );
  }
  console.log(
    table(
      "pod creates: full authn/authz/admission chain vs reduced (AlwaysAllow, no admission plugins)",
      ["variant", "creates", "p50 ms", "p99 ms", "creates/s", "workerd CPU ms/create", "errors"],
      rows,
    ),
  );
  const ratioRows: Row[] = PHASES.map((p) => {
    const c = `c${p.clients}`;
    return [
      c,
      m[`ratio_full_vs_reduced_${c}_p99`] as number,
      m[`ratio_full_vs_reduced_${c}_p50`] as number,
      m[`ratio_full_vs_reduced_${c}_workerd_cpu`] as number,
      m[`ratio_full_vs_reduced_${c}_p99_median_of_rounds`] as number,
      m[`ratio_full_vs_full_admin_${c}_p99`] as number,
      m[`ratio_full_admin_vs_reduced_${c}_p99`] as number,
    ];
  });
  console.log(
    table(
      "ratios (target: full/reduced p99 <= 1.2)",
      [
        "clients",
        "full/reduced p99",
        "full/reduced p50",
        "full/reduced CPU",
        "full/reduced p99 (median of rounds)",
        "authz: full/admin p99",
        "admission: admin/reduced p99",
      ],
      ratioRows,
    ),
  );
  m.target_ratio_p99 = 1.2;
  m.target_met =
    Math.max(m.ratio_full_vs_reduced_c1_p99 ?? Number.NaN, m.ratio_full_vs_reduced_c50_p99 ?? Number.NaN) <=
    1.2
      ? 1
      : 0;
  m.rbac_roles = ROLES;
  m.rbac_rolebindings = ROLES;
  m.rbac_namespaces = NAMESPACES.length;
  m.rounds = ROUNDS;
  m.bench_seconds = (performance.now() - t0) / 1000;
  m.machine_cpus = cpus().length;
  m.machine_load1_before = loadBefore[0] as number;
  m.machine_load1_after = loadavg()[0] as number;
  console.log(
    `\nmachine: ${cpus().length} CPUs, load average ${m.machine_load1_before.toFixed(2)} before, ${m.machine_load1_after.toFixed(2)} after`,
  );
  const file = writeResults("authz-chain", m);
  log(`wrote ${file}`);
  return m;
}

/** Admission plugins on by default (SecurityContextDeny is off unless enabled). */
const DEFAULT_PLUGINS = ALL_PLUGINS_OFF.split(",")
  .map((p) => p.slice(1))
  .filter((p) => p !== "SecurityContextDeny");

/** `--plugins`: the cost of each default admission plugin alone, against none at all. */
export async function runPluginAblation(): Promise<Record<string, number>> {
  const loadBefore = loadavg()[0] as number;
  const rows = await ablatePlugins({
    plugins: (process.env.BENCH_AUTHZ_PLUGINS?.split(",") ?? DEFAULT_PLUGINS).filter(Boolean),
    allOff: ALL_PLUGINS_OFF,
    tokens: [TOKEN_LINE],
    userToken: BENCH_TOKEN,
    namespace: BENCH_NS,
    prepare: async (admin) => {
      await populateRbac(admin, { namespaces: [BENCH_NS], roles: 0 });
      await ensureDefaultAccount(admin);
    },
    clients: 50,
    count: 600,
    seconds: 6,
    rounds: 2,
    log,
  });
  const m: Record<string, number> = {};
  const out: Row[] = [];
  for (const r of rows) {
    const k = `only_${r.plugin.replace(/[^A-Za-z]/g, "_")}_c50`;
    m[`${k}_p50_ms`] = r.p50;
    m[`${k}_p99_ms`] = r.p99;
    m[`${k}_per_s`] = r.perSecond;
    m[`${k}_workerd_cpu_ms_per_create`] = r.workerdMsPerCreate;
    m[`${k}_ratio_p99_vs_none`] = ratio(r.p99, r.baseP99);
    m[`${k}_extra_cpu_ms_per_create`] = r.workerdMsPerCreate - r.baseWorkerdMsPerCreate;
    m[`${k}_errors`] = r.errors;
    out.push([
      r.plugin,
      r.p50,
      r.baseP50,
      r.p99,
      r.baseP99,
      ratio(r.p99, r.baseP99),
      r.workerdMsPerCreate,
      r.baseWorkerdMsPerCreate,
      r.errors,
    ]);
  }
  console.log(
    table(
      "one admission plugin on vs none (AlwaysAllow, 50 clients, alternating rounds)",
      [
        "plugin",
        "p50 ms",
        "none p50",
        "p99 ms",
        "none p99",
        "p99 ratio",
        "CPU ms/create",
        "none CPU",
        "errors",
      ],
      out,
    ),
  );
  m.machine_load1_before = loadBefore;
  m.machine_load1_after = loadavg()[0] as number;
  m.bench_seconds = (performance.now() - t0) / 1000;
  console.log(
    `\nmachine: load average ${loadBefore.toFixed(2)} before, ${m.machine_load1_after.toFixed(2)} after`,
  );
  log(`wrote ${writeResults("authz-chain-plugins", m)}`);
  return m;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv.includes("--plugins")) await runPluginAblation();
  else await runAuthzChain();
}
