// dashboard: the web dashboard in headless Chromium against a cluster of 100 simulated nodes
// running 1,000 pods.
//   1. first render: navigation start -> the pods page's table shows its first screenful and
//      then holds every pod (all namespaces). Measured on first visits (a fresh browser
//      context each time: nothing cached, the token already in the tab's sessionStorage) and
//      on reloads. Same-run floors, from Node: the list of all pods as JSON, and the Table
//      the page asks for (a first page with limit, then the rest with continue).
//   2. a status change visible: a pod's status written (PATCH pods/status, status.reason) ->
//      the pods table shows it; same-run floor: the same change arriving on a plain watch
//      from Node.
//
//   npm run bench dashboard     (or: node --import tsx bench/dashboard.ts)
// Knobs: BENCH_DASH_NODES (100), BENCH_DASH_PODS (1000), BENCH_DASH_CHANGES (100),
// BENCH_DASH_RELOADS (5: first visits, and as many reloads), BENCH_DASH_SCREEN_ROWS (30: the
// rows that make a first screenful), CHROMIUM (/usr/bin/chromium).
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
const SCREEN_ROWS = Number(process.env.BENCH_DASH_SCREEN_ROWS ?? 30);
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const NS = "bench-dash";
const VIEWPORT = { width: 1366, height: 850 };
// the pods page's first page (workers/dashboard/client/pages.ts asks for as many)
const FIRST_PAGE = 100;
const TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io";

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
 * A script for addInitScript: records in window.__dashMarks, by performance.now() (since
 * navigation start), when each selector first matches.
 */
function marks(want: Record<string, string>): string {
  // a string, not a function: tsx's keepNames would put a helper the page lacks in its body
  return `(function () {
    var want = ${JSON.stringify(want)}, got = (window.__dashMarks = {}), observer = new MutationObserver(check);
    function check() {
      var left = 0;
      for (var k in want) {
        if (got[k] === undefined && document.querySelector(want[k])) got[k] = performance.now();
        if (got[k] === undefined) left++;
      }
      if (left) return;
      observer.disconnect();
      // the rows' style, layout and paint: the frame after the last of them is in
      requestAnimationFrame(function () { setTimeout(function () { got.drawn = performance.now(); }, 0); });
    }
    observer.observe(document, { subtree: true, childList: true });
  })();`;
}

/** Where a visit's time went: the page's own requests (start-end, ms since navigation start). */
async function timeline(p: Page): Promise<string> {
  const entries = (await p.evaluate(`(function () {
    var nav = performance.getEntriesByType("navigation")[0];
    return [["shell", 0, nav.responseEnd]].concat(performance.getEntriesByType("resource").map(function (e) {
      var u = new URL(e.name);
      return [u.pathname.split("/").pop() + u.search.replace(/continue=[^&]*/, "continue=..."), e.startTime, e.responseEnd];
    }));
  })()`)) as Array<[string, number, number]>;
  return entries.map(([n, a, b]) => `${n} ${a.toFixed(0)}-${b.toFixed(0)}`).join(", ");
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

    // the floors of a first render: the list of all pods as JSON, and the Table the page asks
    // for (its first page, then the rest with continue), from Node
    const listMs: number[] = [];
    const tableMs: number[] = [];
    const tableFirstMs: number[] = [];
    for (let i = 0; i < RELOADS; i++) {
      let s = performance.now();
      await expectStatus(200, request(api.front, oneShot, "GET", "/api/v1/pods"), "list all pods");
      listMs.push(performance.now() - s);
      s = performance.now();
      const accept = { accept: TABLE_ACCEPT };
      const first = await expectStatus(
        200,
        request(api.front, oneShot, "GET", `/api/v1/pods?limit=${FIRST_PAGE}`, undefined, accept),
        "first page",
      );
      tableFirstMs.push(performance.now() - s);
      const next = JSON.parse(first.body).metadata.continue;
      const rest = `/api/v1/pods?continue=${encodeURIComponent(next)}`;
      await expectStatus(200, request(api.front, oneShot, "GET", rest, undefined, accept), "rest");
      tableMs.push(performance.now() - s);
    }

    server = await chromium.launchServer({
      executablePath: CHROMIUM,
      headless: true,
      args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
    });
    browser = await chromium.connect(server.wsEndpoint());
    const pods = "table[data-table=pods] tbody tr[data-key]";
    const marksScript = marks({
      screen: `${pods}:nth-child(${SCREEN_ROWS})`,
      all: `${pods}:nth-child(${PODS})`,
    });
    const signedIn = `try { sessionStorage.setItem("edgeplane.dashboard.token", ${JSON.stringify(token)}); } catch (e) {}`;
    const readMarks = async (p: Page): Promise<{ screen: number; all: number }> => {
      // a function, not a string: the page's CSP forbids eval, which a string predicate needs
      await p.waitForFunction(() => (window as any).__dashMarks?.drawn !== undefined, undefined, {
        timeout: 60_000,
      });
      return (await p.evaluate("window.__dashMarks")) as { screen: number; all: number; drawn: number };
    };
    // the page's own script time on the rows (its "pods: rows drawn" User Timing measures)
    const scriptMs = async (p: Page): Promise<number> =>
      (await p.evaluate(
        `performance.getEntriesByName("pods: rows drawn").reduce(function (n, e) { return n + e.duration; }, 0)`,
      )) as number;

    // first visits: a fresh context each time (no cache), signed in already
    const visitAll: number[] = [];
    const visitScreen: number[] = [];
    const visitDrawn: number[] = [];
    const visitScript: number[] = [];
    for (let i = 0; i < RELOADS; i++) {
      const ctx = await browser.newContext({ viewport: VIEWPORT });
      await ctx.addInitScript(signedIn);
      await ctx.addInitScript(marksScript);
      const p = await ctx.newPage();
      await p.goto(`${url}/dashboard/#/pods`, { waitUntil: "commit" });
      const m = await readMarks(p);
      visitScreen.push(m.screen);
      visitAll.push(m.all);
      visitDrawn.push(m.drawn);
      visitScript.push(await scriptMs(p));
      if (i === RELOADS - 1) log(`the last first visit: ${await timeline(p)}`);
      await ctx.close();
    }
    log(
      `first visits: screenful ${visitScreen.map((m) => m.toFixed(0)).join(", ")} ms; all rows ${visitAll.map((m) => m.toFixed(0)).join(", ")} ms; drawn ${visitDrawn.map((m) => m.toFixed(0)).join(", ")} ms; the page's script on rows ${visitScript.map((m) => m.toFixed(0)).join(", ")} ms`,
    );

    // reloads of one page (its script cached as the browser caches it)
    const ctx = await browser.newContext({ viewport: VIEWPORT });
    await ctx.addInitScript(signedIn);
    await ctx.addInitScript(marksScript);
    const page = await ctx.newPage();
    await page.goto(`${url}/dashboard/#/pods`, { waitUntil: "commit" });
    await readMarks(page);
    const renderMs: number[] = [];
    for (let i = 0; i < RELOADS; i++) {
      await page.reload({ waitUntil: "commit" });
      renderMs.push((await readMarks(page)).all);
    }
    log(`reloads: all rows ${renderMs.map((m) => m.toFixed(0)).join(", ")} ms`);

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
    const visit = summarize(visitAll);
    const screen = summarize(visitScreen);
    const drawn = summarize(visitDrawn);
    const script = summarize(visitScript);
    const list = summarize(listMs);
    const tableList = summarize(tableMs);
    const tableFirst = summarize(tableFirstMs);
    const change = summarize(pageMs);
    const floor = summarize(watchMs);
    const ack = summarize(ackMs);
    const rows: Row[] = [
      ["first visit: first screenful (ms)", screen.p50, screen.max, tableFirst.p50, tableFirst.max],
      ["first visit: all rows (ms)", visit.p50, visit.max, tableList.p50, tableList.max],
      ["first visit: all rows laid out, next frame (ms)", drawn.p50, drawn.max, "", ""],
      ["first visit: the page's script on rows (ms)", script.p50, script.max, "", ""],
      ["reload: all rows (ms)", render.p50, render.max, list.p50, list.max],
      ["status change visible (ms)", change.p50, change.p99, floor.p50, floor.p99],
      ["status write acknowledged (ms)", ack.p50, ack.p99, "", ""],
    ];
    console.log(
      table(
        `dashboard: ${NODES} simulated nodes, ${PODS} pods, ${CHANGES} changes, ${RELOADS} visits and reloads`,
        ["", "p50", "max / p99", "floor p50", "floor max / p99"],
        rows,
      ),
    );
    console.log(
      `floors, from Node: the Table's first page (limit=${FIRST_PAGE}) and both its pages; the JSON list of all pods; the same change on a plain watch`,
    );
    console.log(`targets: first render <= 1000 ms, status change visible p99 <= 200 ms`);
    const file = writeResults("dashboard", {
      nodes: NODES,
      pods: PODS,
      first_visit_screenful_ms_p50: screen.p50,
      first_visit_ms_p50: visit.p50,
      first_visit_ms_max: visit.max,
      first_visit_drawn_ms_p50: drawn.p50,
      first_visit_rows_script_ms_p50: script.p50,
      reload_ms_p50: render.p50,
      reload_ms_max: render.max,
      list_all_pods_ms_p50: list.p50,
      table_first_page_ms_p50: tableFirst.p50,
      table_both_pages_ms_p50: tableList.p50,
      first_visit_over_table_list_p50: visit.p50 / tableList.p50,
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
