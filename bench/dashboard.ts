// dashboard: the web dashboard in headless Chromium against a cluster of 100 simulated nodes
// running 1,000 pods.
//   1. first render: navigation start -> the pods page's table holds every pod (all
//      namespaces), over several reloads; same-run floor: the one list request it makes,
//      from Node.
//   2. a status change visible: a pod's status written (PATCH pods/status, status.reason) ->
//      the pods table shows it; same-run floor: the same change arriving on a plain watch
//      from Node.
//
//   npm run bench dashboard     (or: node --import tsx bench/dashboard.ts)
// Knobs: BENCH_DASH_NODES (100), BENCH_DASH_PODS (1000), BENCH_DASH_CHANGES (100),
// BENCH_DASH_RELOADS (5), CHROMIUM (/usr/bin/chromium).
import { existsSync } from "node:fs";
import { type Browser, type BrowserServer, chromium, type Page } from "playwright-core";
import { startSimulatedNodes } from "../agent/simulated/simnodes";
import { type ApiServer, startApiServer } from "./lib/apiserver";
import { expectStatus, keepAliveAgent, oneShot, openLineStream, request } from "./lib/http";
import { type Row, table, writeResults } from "./lib/report";
import { ensureNamespace, loadText, serverCreds, smallPod } from "./lib/sched-load";
import { sleep, summarize } from "./lib/stats";

const NODES = Number(process.env.BENCH_DASH_NODES ?? 100);
const PODS = Number(process.env.BENCH_DASH_PODS ?? 1000);
const CHANGES = Number(process.env.BENCH_DASH_CHANGES ?? 100);
const RELOADS = Number(process.env.BENCH_DASH_RELOADS ?? 5);
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const NS = "bench-dash";

const t0 = performance.now();
const log = (s: string) =>
  console.log(`[${((performance.now() - t0) / 1000).toFixed(1)}s] ${s} (load ${loadText()})`);

async function createPods(api: ApiServer): Promise<void> {
  const agent = keepAliveAgent(16);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < PODS; i = next++) {
      const name = `p-${String(i).padStart(4, "0")}`;
      // a connection the busy machine drops is retried (409: the first try got through)
      for (let attempt = 1; ; attempt++) {
        try {
          const create = request(api.front, agent, "POST", `/api/v1/namespaces/${NS}/pods`, smallPod(name));
          await expectStatus([201, 409], create, name);
          break;
        } catch (e) {
          if (attempt >= 5) throw e;
          await sleep(200 * attempt);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  agent.destroy();
}

/**
 * When an element matching selector appears in the page (at once if it is there), by a
 * MutationObserver in the page: performance.now() (since navigation) or Date.now() (epoch).
 */
function whenTrue(page: Page, clock: "performance" | "epoch", selector: string): Promise<number> {
  // a string, not a function: tsx's keepNames would put a helper the page lacks in its body
  const stamp = clock === "epoch" ? "Date.now()" : "performance.now()";
  return page.evaluate(`new Promise((resolve) => {
    var sel = ${JSON.stringify(selector)}, observer = new MutationObserver(check);
    function check() {
      if (!document.querySelector(sel)) return false;
      observer.disconnect();
      resolve(${stamp});
      return true;
    }
    if (!check()) observer.observe(document, { subtree: true, childList: true, attributes: true });
  })`) as Promise<number>;
}

async function runningPods(api: ApiServer): Promise<number> {
  const r = await expectStatus(
    200,
    request(api.front, oneShot, "GET", `/api/v1/namespaces/${NS}/pods`),
    "list",
  );
  return (JSON.parse(r.body).items as any[]).filter((p) => p.status?.phase === "Running").length;
}

async function main(): Promise<void> {
  if (!existsSync(CHROMIUM)) {
    console.log(`bench dashboard: SKIPPED: ${CHROMIUM} not found (apt-get install -y chromium)`);
    return;
  }
  const api = await startApiServer();
  const { url, token } = serverCreds(api.front);
  let server: BrowserServer | undefined;
  let browser: Browser | undefined;
  const sim = await startSimulatedNodes({
    server: url,
    token,
    count: NODES,
    namePrefix: "dsim-",
    leaseSeconds: 10,
  });
  try {
    log(`${NODES} simulated nodes joined`);
    await ensureNamespace(api.front, NS);
    await createPods(api);
    log(`${PODS} pods created`);
    const deadline = Date.now() + 300_000;
    for (let n = 0; (n = await runningPods(api)) < PODS; ) {
      if (Date.now() > deadline) throw new Error(`only ${n} of ${PODS} pods Running after 300 s`);
      await sleep(1000);
    }
    log(`${PODS} pods Running`);

    // the floor of a first render: the pods list the page asks for, from Node
    const listMs: number[] = [];
    for (let i = 0; i < RELOADS; i++) {
      const s = performance.now();
      await expectStatus(200, request(api.front, oneShot, "GET", "/api/v1/pods"), "list all pods");
      listMs.push(performance.now() - s);
    }

    server = await chromium.launchServer({
      executablePath: CHROMIUM,
      headless: true,
      args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
    });
    browser = await chromium.connect(server.wsEndpoint());
    const page = await browser.newPage({ viewport: { width: 1366, height: 850 } });
    await page.goto(`${url}/dashboard/`);
    await page.evaluate((t) => sessionStorage.setItem("edgeplane.dashboard.token", t), token);
    await page.goto(`${url}/dashboard/#/pods`);
    const renderMs: number[] = [];
    for (let i = 0; i < RELOADS; i++) {
      await page.reload({ waitUntil: "domcontentloaded" });
      renderMs.push(
        await whenTrue(page, "performance", `table[data-table=pods] tbody tr[data-key]:nth-child(${PODS})`),
      );
    }
    log(`first render: ${renderMs.map((m) => m.toFixed(0)).join(", ")} ms`);

    // a status change, seen by a plain watch from Node and by the page
    const rv = JSON.parse(
      (await request(api.front, oneShot, "GET", `/api/v1/namespaces/${NS}/pods?limit=1`)).body,
    ).metadata.resourceVersion;
    const watchSeen = new Map<string, number>();
    const watch = await openLineStream(
      api.front,
      "GET",
      `/api/v1/namespaces/${NS}/pods?watch=1&resourceVersion=${rv}`,
      undefined,
      (line) => {
        const reason = JSON.parse(line).object?.status?.reason;
        if (typeof reason === "string" && !watchSeen.has(reason)) watchSeen.set(reason, Date.now());
      },
    );
    const agent = keepAliveAgent(1);
    const pageMs: number[] = [];
    const watchMs: number[] = [];
    const ackMs: number[] = [];
    for (let i = 0; i < CHANGES; i++) {
      const reason = `Bench${i}`;
      const name = `p-${String((i * 7) % PODS).padStart(4, "0")}`;
      const seen = whenTrue(page, "epoch", `[data-status="${reason}"]`);
      await page.evaluate(() => 0); // the observer above is in place before the write
      const wrote = Date.now();
      await expectStatus(
        200,
        request(
          api.front,
          agent,
          "PATCH",
          `/api/v1/namespaces/${NS}/pods/${name}/status`,
          JSON.stringify({ status: { reason } }),
          { "content-type": "application/merge-patch+json" },
        ),
        "status patch",
      );
      ackMs.push(Date.now() - wrote);
      pageMs.push((await seen) - wrote);
      const w = watchSeen.get(reason);
      if (w !== undefined) watchMs.push(w - wrote);
      await sleep(20);
    }
    watch.close();
    agent.destroy();

    const render = summarize(renderMs);
    const list = summarize(listMs);
    const change = summarize(pageMs);
    const floor = summarize(watchMs);
    const ack = summarize(ackMs);
    const rows: Row[] = [
      ["first render, pods page (ms)", render.p50, render.max, list.p50, list.max],
      ["status change visible (ms)", change.p50, change.p99, floor.p50, floor.p99],
      ["status write acknowledged (ms)", ack.p50, ack.p99, "", ""],
    ];
    console.log(
      table(
        `dashboard: ${NODES} simulated nodes, ${PODS} pods, ${CHANGES} changes, ${RELOADS} reloads`,
        ["", "p50", "max / p99", "floor p50", "floor max / p99"],
        rows,
      ),
    );
    console.log("floors: the same list request from Node; the same change on a plain watch from Node");
    console.log(`targets: first render <= 1000 ms, status change visible p99 <= 200 ms`);
    const file = writeResults("dashboard", {
      nodes: NODES,
      pods: PODS,
      first_render_ms_p50: render.p50,
      first_render_ms_max: render.max,
      list_all_pods_ms_p50: list.p50,
      first_render_over_list_p50: render.p50 / list.p50,
      status_visible_ms_p50: change.p50,
      status_visible_ms_p99: change.p99,
      watch_floor_ms_p50: floor.p50,
      watch_floor_ms_p99: floor.p99,
      status_write_ack_ms_p50: ack.p50,
      status_visible_over_watch_p99: change.p99 / floor.p99,
    });
    console.log(`wrote ${file}`);
  } finally {
    const pid = server?.process().pid;
    await browser?.close().catch(() => {});
    await server?.close().catch(() => {});
    if (pid) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // closed already
      }
    }
    await sim.stop();
    await api.stop();
  }
}

await main();
