// client-cert-tls: what a client certificate costs against a token, per new TLS connection.
// 50 clients each open a new HTTPS connection per request (a full handshake every time, no
// session reuse) and GET a namespace as the admin: by bearer token, or by the admin's client
// certificate (which the front door verifies and reports to the Worker); and the same in a
// cluster other than the root made by `edgeplane cluster create` (its token, and its
// kubeconfig-x509's certificate, which the Worker checks against the cluster's own CA). Rounds
// rotate through the variants on one server so the machine's drift hits them alike. Prints
// connections/s and request p50/p99 for each and their ratios; writes
// .edgeplane/bench/client-cert-tls.json.
//
//   npm run bench client-cert-tls   (or: node --import tsx bench/client-cert-tls.ts)
// Knobs: BENCH_CERT_ROUNDS (default 4), BENCH_CERT_SECONDS (default 5), BENCH_CERT_CLIENTS (50).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startDevServer } from "../local-engine/devserver";
import { type Row, table, writeResults } from "./lib/report";
import { ratio, summarize } from "./lib/stats";

const ROUNDS = Number(process.env.BENCH_CERT_ROUNDS ?? 4);
const SECONDS = Number(process.env.BENCH_CERT_SECONDS ?? 5);
const CLIENTS = Number(process.env.BENCH_CERT_CLIENTS ?? 50);

interface Credential {
  /** the path after the server: the root's, or a cluster's */
  path: string;
  ca: string;
  token?: string;
  cert?: string;
  key?: string;
}

/** One GET on a new connection; its time in ms (throws on a status other than 200). */
function once(server: string, cred: Credential): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = https.request(
      `${server}${cred.path}`,
      {
        agent: false,
        ca: cred.ca,
        cert: cred.cert,
        key: cred.key,
        headers: cred.token ? { authorization: `Bearer ${cred.token}` } : {},
      },
      (res) => {
        res.resume();
        res.on("end", () =>
          res.statusCode === 200
            ? resolve(performance.now() - t0)
            : reject(new Error(`status ${res.statusCode}`)),
        );
      },
    );
    req.on("error", reject);
    req.end();
  });
}

/** CLIENTS closed loops for SECONDS: every request's time, and errors. */
async function load(url: string, cred: Credential) {
  const samples: number[] = [];
  let errors = 0;
  const until = performance.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < until) {
        try {
          samples.push(await once(url, cred));
        } catch {
          errors++;
        }
      }
    }),
  );
  return { samples, errors };
}

const dir = mkdtempSync(join(tmpdir(), "edgeplane-bench-cert-"));
const server = await startDevServer({ stateDir: dir, quiet: true });
try {
  const ca = server.caCert;
  const pki = (f: string) => readFileSync(join(dir, "pki", f), "utf8");
  // a cluster as a user makes one: its kubeconfig (token) and kubeconfig-x509 (certificate)
  const cli = join(import.meta.dirname, "..", "cli/bin/edgeplane.mjs");
  execFileSync(
    process.execPath,
    [cli, "cluster", "create", "bench", "--kubeconfig", join(dir, "kubeconfig")],
    {
      env: { ...process.env, EDGEPLANE_STATE_DIR: dir },
    },
  );
  const config = (f: string) => readFileSync(join(dir, "clusters", "bench", f), "utf8");
  const field = (text: string, name: string) => new RegExp(`${name}: (\\S+)`).exec(text)![1];
  const b64 = (text: string) => Buffer.from(text, "base64").toString();
  const x509 = config("kubeconfig-x509");
  const ns = "/api/v1/namespaces/default";
  const variants: Record<string, Credential> = {
    token: { path: ns, ca, token: server.token },
    cert: { path: ns, ca, cert: pki("admin.crt"), key: pki("admin.key") },
    "cluster-token": { path: `/clusters/bench${ns}`, ca, token: field(config("kubeconfig"), "token") },
    "cluster-cert": {
      path: `/clusters/bench${ns}`,
      ca,
      cert: b64(field(x509, "client-certificate-data")),
      key: b64(field(x509, "client-key-data")),
    },
  };
  const url = server.httpsUrl;
  for (const cred of Object.values(variants)) await once(url, cred); // each works before timing
  const names = Object.keys(variants);
  const all: Record<string, { samples: number[]; errors: number }> = Object.fromEntries(
    names.map((n) => [n, { samples: [], errors: 0 }]),
  );
  for (let round = 0; round < ROUNDS; round++)
    for (const name of [...names.slice(round % names.length), ...names.slice(0, round % names.length)]) {
      const r = await load(url, variants[name]);
      all[name].samples.push(...r.samples);
      all[name].errors += r.errors;
      console.log(`round ${round + 1} ${name}: ${(r.samples.length / SECONDS).toFixed(0)} conn/s`);
    }
  const figures = Object.fromEntries(
    Object.entries(all).map(([name, r]) => [
      name,
      { perSecond: r.samples.length / (ROUNDS * SECONDS), ...summarize(r.samples), errors: r.errors },
    ]),
  );
  const rows: Row[] = Object.entries(figures).map(([name, f]) => [name, f.perSecond, f.p50, f.p99, f.errors]);
  const slower = ratio(figures.token.perSecond, figures.cert.perSecond);
  const p99 = ratio(figures.cert.p99, figures.token.p99);
  rows.push([
    "cert/token",
    ratio(figures.cert.perSecond, figures.token.perSecond),
    ratio(figures.cert.p50, figures.token.p50),
    p99,
    "",
  ]);
  const cluster = (a: string, b: string) => ratio(figures[a].perSecond, figures[b].perSecond);
  rows.push([
    "cluster-cert/cluster-token",
    cluster("cluster-cert", "cluster-token"),
    ratio(figures["cluster-cert"].p50, figures["cluster-token"].p50),
    ratio(figures["cluster-cert"].p99, figures["cluster-token"].p99),
    "",
  ]);
  console.log(
    table(
      `new TLS connection per request, ${CLIENTS} clients, ${ROUNDS}x${SECONDS} s each`,
      ["credential", "conn/s", "p50 ms", "p99 ms", "errors"],
      rows,
    ),
  );
  console.log(`\ntoken/cert connections per second: ${slower} (target <= 1.2); cert/token p99: ${p99}`);
  const file = writeResults("client-cert-tls", {
    token_conn_per_s: figures.token.perSecond,
    cert_conn_per_s: figures.cert.perSecond,
    token_p99_ms: figures.token.p99,
    cert_p99_ms: figures.cert.p99,
    throughput_ratio: slower,
    p99_ratio: p99,
    cluster_token_conn_per_s: figures["cluster-token"].perSecond,
    cluster_cert_conn_per_s: figures["cluster-cert"].perSecond,
    cluster_token_p99_ms: figures["cluster-token"].p99,
    cluster_cert_p99_ms: figures["cluster-cert"].p99,
    cluster_cert_vs_token_throughput: cluster("cluster-cert", "cluster-token"),
    cluster_cert_vs_token_p99: ratio(figures["cluster-cert"].p99, figures["cluster-token"].p99),
  });
  console.log(`wrote ${file}`);
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
