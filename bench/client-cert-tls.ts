// client-cert-tls: what a client certificate costs against a token, per new TLS connection.
// 50 clients each open a new HTTPS connection per request (a full handshake every time, no
// session reuse) and GET a namespace as the admin: by bearer token, or by the admin's client
// certificate (which the front door verifies and reports to the Worker). Rounds alternate
// between the two (A/B/A/B...) on one server so the machine's drift hits both alike. Prints
// connections/s and request p50/p99 for each and their ratios; writes
// .edgeplane/bench/client-cert-tls.json.
//
//   npm run bench client-cert-tls   (or: node --import tsx bench/client-cert-tls.ts)
// Knobs: BENCH_CERT_ROUNDS (default 4), BENCH_CERT_SECONDS (default 5), BENCH_CERT_CLIENTS (50).
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
  ca: string;
  token?: string;
  cert?: string;
  key?: string;
}

/** One GET on a new connection; its time in ms (throws on a status other than 200). */
function once(url: string, cred: Credential): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = https.request(
      url,
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
  const variants: Record<string, Credential> = {
    token: { ca, token: server.token },
    cert: { ca, cert: pki("admin.crt"), key: pki("admin.key") },
  };
  const url = `${server.httpsUrl}/api/v1/namespaces/default`;
  for (const cred of Object.values(variants)) await once(url, cred); // both work before timing
  const all: Record<string, { samples: number[]; errors: number }> = {
    token: { samples: [], errors: 0 },
    cert: { samples: [], errors: 0 },
  };
  for (let round = 0; round < ROUNDS; round++)
    for (const name of round % 2 ? ["cert", "token"] : ["token", "cert"]) {
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
  });
  console.log(`wrote ${file}`);
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
