// The slow-header attack (issue 33, finding 2), as a measurement both the test suite (a short
// form) and `npm run bench slow-headers` (the full form: 30 connections/s for 60 s) run.
//
// Without credentials, an attacker opens `perSecond` connections a second; each sends a
// request line, then one header line every `trickleMs`, never ending its head. Meanwhile an
// authenticated client lists configmaps one request after another (an admin's lists), an
// anonymous probe asks /readyz, and nodes renew their Leases with their own node credentials
// every `leaseIntervalMs`. The same client runs first for `quietSeconds` without the attack:
// its p99 then is the baseline. A renewal is missed when it fails or takes longer than the
// renewal interval (the next one would be due before it was done).
import net from "node:net";
import { bootstrapTokenSecret, randomBootstrapToken } from "../../api/bootstrap-token";
import { type Summary, summarize } from "./stats";

export interface SlowHeaderOptions {
  /** the control plane's front door, http://127.0.0.1:<port> */
  url: string;
  /** an admin token (to set up, and as the authenticated client) */
  token: string;
  attackSeconds: number;
  quietSeconds: number;
  perSecond?: number;
  trickleMs?: number;
  leaseNodes?: number;
  leaseIntervalMs?: number;
  /** a request that takes longer counts as timed out (and as its time) */
  timeoutMs?: number;
  log?: (line: string) => void;
}

export interface PhaseFigures {
  client: Summary & { timeouts: number; errors: number };
  readyz: Summary & { timeouts: number; errors: number };
  leases: Summary & { renewals: number; missed: number };
}

export interface SlowHeaderResult {
  quiet: PhaseFigures;
  attack: PhaseFigures;
  attackers: { opened: number; closedByServer: number; answered408: number; refused: number; open: number };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function call(
  url: string,
  init: RequestInit,
  timeoutMs: number,
): Promise<{ ms: number; status: number }> {
  const t0 = performance.now();
  try {
    const r = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    await r.arrayBuffer();
    return { ms: performance.now() - t0, status: r.status };
  } catch {
    return { ms: performance.now() - t0, status: 0 };
  }
}

/** A node's credential and its Lease, made through a bootstrap token as an agent would. */
async function leaseHolder(url: string, admin: string, name: string) {
  const headers = { authorization: `Bearer ${admin}`, "content-type": "application/json" };
  const { id, secret, token } = randomBootstrapToken();
  const made = await fetch(`${url}/api/v1/namespaces/kube-system/secrets`, {
    method: "POST",
    headers,
    body: JSON.stringify(bootstrapTokenSecret(id, secret)),
  });
  if (made.status !== 201) throw new Error(`bootstrap token: ${made.status} ${await made.text()}`);
  const ex = await fetch(`${url}/edgeplane/node-credentials`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ nodeName: name }),
  });
  if (ex.status !== 201) throw new Error(`node credential: ${ex.status} ${await ex.text()}`);
  const credential = ((await ex.json()) as { token: string }).token;
  const nodeHeaders = { authorization: `Bearer ${credential}`, "content-type": "application/json" };
  const node = await fetch(`${url}/api/v1/nodes`, {
    method: "POST",
    headers: nodeHeaders,
    body: JSON.stringify({ apiVersion: "v1", kind: "Node", metadata: { name } }),
  });
  if (node.status !== 201 && node.status !== 409)
    throw new Error(`node: ${node.status} ${await node.text()}`);
  const leases = `${url}/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases`;
  const created = await fetch(leases, {
    method: "POST",
    headers: nodeHeaders,
    body: JSON.stringify({
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name, namespace: "kube-node-lease" },
      spec: { holderIdentity: name, leaseDurationSeconds: 40, renewTime: new Date().toISOString() },
    }),
  });
  if (created.status !== 201) throw new Error(`lease: ${created.status} ${await created.text()}`);
  let lease = (await created.json()) as { spec: Record<string, unknown> };
  /** One renewal: PUT with the last resourceVersion, as the kubelet's lease controller does. */
  return async (timeoutMs: number): Promise<{ ms: number; ok: boolean }> => {
    const t0 = performance.now();
    try {
      const r = await fetch(`${leases}/${name}`, {
        method: "PUT",
        headers: nodeHeaders,
        body: JSON.stringify({ ...lease, spec: { ...lease.spec, renewTime: new Date().toISOString() } }),
        signal: AbortSignal.timeout(timeoutMs),
      });
      const body = await r.text();
      if (r.status === 200) lease = JSON.parse(body);
      return { ms: performance.now() - t0, ok: r.status === 200 };
    } catch {
      return { ms: performance.now() - t0, ok: false };
    }
  };
}

/** Attackers: connections that never finish their heads, opened at a steady pace. */
function attack(port: number, perSecond: number, trickleMs: number) {
  const stats = { opened: 0, closedByServer: 0, answered408: 0, refused: 0, open: 0 };
  const sockets = new Set<net.Socket>();
  let stopped = false;
  const open = () => {
    const s = net.connect(port, "127.0.0.1");
    stats.opened++;
    sockets.add(s);
    let got = "";
    let connected = false;
    s.on("connect", () => {
      connected = true;
      stats.open++;
      s.write("GET /api/v1/namespaces HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    });
    s.on("data", (d) => (got += d));
    const timer = setInterval(
      () => s.write(`X-Slow-${Math.random().toString(36).slice(2, 6)}: 1\r\n`),
      trickleMs,
    );
    s.on("error", () => {});
    s.on("close", () => {
      clearInterval(timer);
      sockets.delete(s);
      if (connected) stats.open--;
      else stats.refused++;
      if (stopped) return;
      stats.closedByServer++;
      if (got.startsWith("HTTP/1.1 408 ")) stats.answered408++;
    });
  };
  const pace = setInterval(open, 1000 / perSecond);
  return {
    stats,
    stop() {
      stopped = true;
      clearInterval(pace);
      for (const s of sockets) s.destroy();
    },
  };
}

/** Runs one phase: the client, the probe and the leases for `seconds`. */
async function phase(
  opts: Required<Omit<SlowHeaderOptions, "log">>,
  listUrl: string,
  renewals: ((timeoutMs: number) => Promise<{ ms: number; ok: boolean }>)[],
  seconds: number,
): Promise<PhaseFigures> {
  const end = performance.now() + seconds * 1000;
  const client: number[] = [];
  const readyz: number[] = [];
  const lease: number[] = [];
  const counts = {
    clientTimeouts: 0,
    clientErrors: 0,
    readyzTimeouts: 0,
    readyzErrors: 0,
    renewals: 0,
    missed: 0,
  };
  const auth = { headers: { authorization: `Bearer ${opts.token}` } };
  const clientLoop = async () => {
    while (performance.now() < end) {
      const r = await call(listUrl, auth, opts.timeoutMs);
      client.push(r.ms);
      if (r.status === 0) counts.clientTimeouts++;
      else if (r.status !== 200) counts.clientErrors++;
    }
  };
  const probeLoop = async () => {
    while (performance.now() < end) {
      const r = await call(`${opts.url}/readyz`, {}, opts.timeoutMs);
      readyz.push(r.ms);
      if (r.status === 0) counts.readyzTimeouts++;
      else if (r.status !== 200) counts.readyzErrors++;
      await sleep(200);
    }
  };
  const leaseLoop = async (renew: (typeof renewals)[number], offset: number) => {
    await sleep(offset);
    while (performance.now() < end) {
      const due = performance.now() + opts.leaseIntervalMs;
      const r = await renew(opts.leaseIntervalMs * 4);
      lease.push(r.ms);
      counts.renewals++;
      if (!r.ok || r.ms > opts.leaseIntervalMs) counts.missed++;
      await sleep(Math.max(0, due - performance.now()));
    }
  };
  await Promise.all([
    clientLoop(),
    probeLoop(),
    ...renewals.map((r, i) => leaseLoop(r, (i * opts.leaseIntervalMs) / renewals.length)),
  ]);
  return {
    client: { ...summarize(client), timeouts: counts.clientTimeouts, errors: counts.clientErrors },
    readyz: { ...summarize(readyz), timeouts: counts.readyzTimeouts, errors: counts.readyzErrors },
    leases: { ...summarize(lease), renewals: counts.renewals, missed: counts.missed },
  };
}

export async function slowHeaderAttack(options: SlowHeaderOptions): Promise<SlowHeaderResult> {
  const opts = {
    perSecond: 30,
    trickleMs: 1000,
    leaseNodes: 3,
    leaseIntervalMs: 1000,
    timeoutMs: 4000,
    ...options,
  };
  const log = options.log ?? (() => {});
  const port = Number(new URL(opts.url).port);
  const headers = { authorization: `Bearer ${opts.token}`, "content-type": "application/json" };
  // what the client lists: a namespace of 20 configmaps
  const ns = `slow-headers-${Math.random().toString(36).slice(2, 7)}`;
  const made = await fetch(`${opts.url}/api/v1/namespaces`, {
    method: "POST",
    headers,
    body: JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } }),
  });
  if (made.status !== 201) throw new Error(`namespace: ${made.status} ${await made.text()}`);
  for (let i = 0; i < 20; i++)
    await fetch(`${opts.url}/api/v1/namespaces/${ns}/configmaps`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: `cm-${i}` },
        data: { i: `${i}` },
      }),
    });
  const renewals = [];
  for (let i = 0; i < opts.leaseNodes; i++)
    renewals.push(await leaseHolder(opts.url, opts.token, `${ns}-node-${i}`));
  const listUrl = `${opts.url}/api/v1/namespaces/${ns}/configmaps`;
  // warm: the client's credential and the nodes' are known to the front door from here on
  await phase(opts, listUrl, renewals, 2);
  log(`quiet: ${opts.quietSeconds}s of the client alone`);
  const quiet = await phase(opts, listUrl, renewals, opts.quietSeconds);
  log(`attack: ${opts.perSecond} connections/s trickling headers for ${opts.attackSeconds}s`);
  const attacker = attack(port, opts.perSecond, opts.trickleMs);
  let during: PhaseFigures;
  try {
    during = await phase(opts, listUrl, renewals, opts.attackSeconds);
  } finally {
    attacker.stop();
  }
  await fetch(`${opts.url}/api/v1/namespaces/${ns}`, { method: "DELETE", headers });
  for (let i = 0; i < opts.leaseNodes; i++)
    await fetch(`${opts.url}/api/v1/nodes/${ns}-node-${i}`, { method: "DELETE", headers });
  return { quiet, attack: during, attackers: { ...attacker.stats } };
}
