// The web dashboard in a real headless Chromium (Debian's chromium through playwright-core)
// against the shared control plane: no credentials get the login page and no data, a wrong
// token is told so, and with the admin token the pod page draws FLOW.md's stages and fills
// them in live, without a reload, as a pod made with kubectl is scheduled onto a simulated
// node and starts. Screenshots go to <state>/artifacts/dashboard/.
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, type BrowserServer, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type SimulatedNodes, startSimulatedNodes } from "../../agent/simulated/simnodes";
import { api, freshNamespace, hasKubectl, kubectl, shared } from "../helpers/cluster";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium)
  console.warn(`SKIPPED: dashboard browser tests: ${CHROMIUM} not found (.ci/run installs chromium)`);

const t = shared();
const ARTIFACTS = join(
  process.env.EDGEPLANE_STATE_DIR ?? join(process.cwd(), ".edgeplane"),
  "artifacts",
  "dashboard",
);
// the scheduler must not place other suites' pods on this node
const VIEWPORT = { width: 1366, height: 850 };
const TAINT = { key: "edgeplane.dev/simulated", value: "true", effect: "NoSchedule" };

describe.skipIf(!hasChromium || !hasKubectl)("dashboard in headless Chromium", () => {
  let server: BrowserServer | undefined;
  let browser: Browser;
  let pid: number | undefined;
  let page: Page;
  let sim: SimulatedNodes | undefined;
  let ns = "";
  const node = `dash-${Math.random().toString(36).slice(2, 7)}-0`;

  const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
  const text = (sel: string) => page.$eval(sel, (e) => e.textContent ?? "");

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    ns = await freshNamespace(t, "dash");
    sim = await startSimulatedNodes({
      server: t.url,
      token: t.token,
      count: 1,
      namePrefix: node.slice(0, -1),
      taints: [TAINT],
      // long enough that the page shows the pod scheduled but not yet started
      podStartDelayMs: 1500,
    });
    server = await chromium.launchServer({
      executablePath: CHROMIUM,
      headless: true,
      args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
    });
    pid = server.process().pid;
    browser = await chromium.connect(server.wsEndpoint());
    page = await browser.newPage({ viewport: VIEWPORT });
  });

  afterAll(async () => {
    await browser?.close().catch(() => {});
    await server?.close().catch(() => {});
    if (pid) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone with close()
      }
    }
    if (ns) await api(t, "DELETE", `/api/v1/namespaces/${ns}`);
    await sim?.stop({ removeNodes: true });
  });

  it("without credentials: the shell is a 401 login page with no data, and the API gives nothing", async () => {
    const res = await fetch(`${t.url}/dashboard/`);
    expect(res.status).toBe(401);
    const html = await res.text();
    expect(html).toContain('id="login-form"');
    expect(html).not.toContain(ns);
    expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");

    // no credential is 401 on the API (anonymous is served on health and version only), and
    // so is a credential that does not check out
    const anon = await fetch(`${t.url}/api/v1/namespaces/${ns}/pods`);
    expect(anon.status).toBe(401);
    expect(((await anon.json()) as any).items).toBeUndefined();
    const bad = await fetch(`${t.url}/api/v1/namespaces/${ns}/pods`, {
      headers: { authorization: "Bearer nope" },
    });
    expect(bad.status).toBe(401);

    const nav = await page.goto(`${t.url}/dashboard/`, { waitUntil: "load" });
    expect(nav?.status()).toBe(401);
    expect(await page.$eval("#login", (e) => (e as HTMLElement).hidden)).toBe(false);
    expect(await page.$eval("#view", (e) => (e as HTMLElement).hidden)).toBe(true);
    expect(await page.$eval("#view", (e) => e.childElementCount)).toBe(0);
    await shot("01-login");
  });

  it("a wrong token is refused with a clear error and kept nowhere", async () => {
    await page.fill("#token", "not-a-real-token");
    await page.click("#login-submit");
    await page.waitForFunction(() => (document.querySelector("#login-error")?.textContent ?? "").length > 0);
    const err = await text("#login-error");
    expect(err).toContain("did not accept this token");
    expect(err).toContain("401");
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    expect(await page.$eval("#view", (e) => (e as HTMLElement).hidden)).toBe(true);
    await shot("02-wrong-token");
  });

  it("signs in with a token (pasted as a kubeconfig line) and lists pods and nodes", async () => {
    await page.fill("#token", `users:\n- name: admin\n  user:\n    token: ${t.token}\n`);
    await page.click("#login-submit");
    await page.waitForFunction(() => document.querySelector("#who")?.textContent?.includes("admin"));
    expect(await text("#login-error")).toBe("");
    await page.waitForSelector("table[data-table=pods][data-loaded]");

    // keyboard: the sign-in button hid, so the focus moved to the content it revealed
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("main");
    // a fresh load keeps the session (sessionStorage); from the top of the page the first
    // Tab stops are the skip link, then the sections' links
    await page.reload({ waitUntil: "load" });
    await page.waitForSelector("table[data-table=pods][data-loaded]");
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.className)).toBe("skip");
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Nodes");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => location.hash === "#/nodes");

    await page.goto(`${t.url}/dashboard/#/nodes`);
    await page.waitForSelector(`table[data-table=nodes] tr[data-key="/${node}"]`);
    const row = await page.$eval(`tr[data-key="/${node}"]`, (e) => e.textContent ?? "");
    expect(row).toContain("Ready");
    await shot("03-nodes");
  });

  it("draws the pod's flow and fills its stages in live as kubectl's pod is scheduled and starts", async () => {
    const name = "web";
    await page.goto(`${t.url}/dashboard/#/pod/${ns}/${name}`);
    await page.waitForSelector("ol.flow li[data-stage=ready]");
    expect(await page.$$eval("ol.flow li", (l) => l.map((e) => e.getAttribute("data-stage")))).toEqual([
      "authn",
      "authz",
      "admission",
      "stored",
      "controller",
      "scheduler",
      "agent",
      "sandbox",
      "cni",
      "image",
      "init",
      "containers",
      "ready",
    ]);
    expect(await page.$eval("#pod-status", (e) => e.getAttribute("data-status"))).toBe("absent");
    await shot("04-pod-before");

    // record every state the chart passes through, and prove the page never reloads
    await page.evaluate(() => {
      const w = window as any;
      w.__sameDocument = true;
      w.__seen = [];
      const snap = () => {
        const s = Array.from(document.querySelectorAll("ol.flow li"))
          .map((e) => `${e.getAttribute("data-stage")}=${e.getAttribute("data-state")}`)
          .join(" ");
        if (w.__seen[w.__seen.length - 1] !== s) w.__seen.push(s);
      };
      new MutationObserver(snap).observe(document.querySelector("#flow")!, {
        subtree: true,
        childList: true,
      });
    });

    const overrides = {
      apiVersion: "v1",
      spec: {
        nodeSelector: { "kubernetes.io/hostname": node },
        tolerations: [{ ...TAINT, operator: "Equal" }],
      },
    };
    const run = await kubectl(t, [
      "run",
      name,
      "-n",
      ns,
      "--image=127.0.0.1:5000/edgeplane/busybox:1",
      `--overrides=${JSON.stringify(overrides)}`,
      "--",
      "sleep",
      "3600",
    ]);
    expect(run.code, run.stderr).toBe(0);

    await page.waitForSelector("ol.flow li[data-stage=scheduler][data-state=done]", { timeout: 15_000 });
    await page.waitForSelector("ol.flow li[data-stage=ready][data-state=done]", { timeout: 20_000 });
    await shot("05-pod-ready");
    expect(await page.evaluate(() => (window as any).__sameDocument)).toBe(true);
    expect(await page.$eval("#pod-status", (e) => e.getAttribute("data-status"))).toBe("Running");

    const seen: string[] = await page.evaluate(() => (window as any).__seen);
    // the pod existed, scheduled but not yet running, before it was Ready: seen in between
    expect(seen.some((s) => s.includes("scheduler=done") && s.includes("agent=waiting"))).toBe(true);
    const final = seen[seen.length - 1];
    for (const id of [
      "authn",
      "stored",
      "scheduler",
      "agent",
      "sandbox",
      "cni",
      "image",
      "containers",
      "ready",
    ]) {
      expect(final).toContain(`${id}=done`);
    }
    expect(final).toContain("controller=skipped");
    // a done stage is labelled with its duration
    const label = await page.$eval("li[data-stage=scheduler] .dur", (e) => e.textContent ?? "");
    expect(label).toMatch(/\d+ (ms|s)/);

    await page.goto(`${t.url}/dashboard/#/pods`);
    await page.waitForSelector(`tr[data-key="${ns}/${name}"] [data-status=Running]`);
    await shot("06-pods");
  });

  it("follows a dark system theme", async () => {
    await page.emulateMedia({ colorScheme: "dark" });
    await page.goto(`${t.url}/dashboard/#/pod/${ns}/web`);
    await page.waitForSelector("ol.flow li[data-stage=ready][data-state=done]");
    const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    expect(bg).toBe("rgb(13, 17, 23)");
    await shot("07-pod-dark");
    await page.emulateMedia({ colorScheme: "light" });
    expect(await page.evaluate(() => getComputedStyle(document.body).backgroundColor)).toBe(
      "rgb(255, 255, 255)",
    );
  });

  it("pages 1,000 pods: the first screenful drawn alone, then the rest; rows on the second page stay live", async () => {
    const many = await freshNamespace(t, "dash-many");
    const N = 1000;
    const name = (i: number) => `p-${String(i).padStart(4, "0")}`;
    // the page's pod list requests
    const lists: Array<{ url: URL; accept?: string }> = [];
    const onRequest = (r: { url(): string; headers(): Record<string, string> }) => {
      const url = new URL(r.url());
      if (url.pathname === `/api/v1/namespaces/${many}/pods` && !url.searchParams.has("watch"))
        lists.push({ url, accept: r.headers().accept });
    };
    try {
      // held by a scheduling gate: no node runs them, so they cost the shared server little
      let next = 0;
      const create = async () => {
        for (let i = next++; i < N; i = next++) {
          const r = await api(t, "POST", `/api/v1/namespaces/${many}/pods`, {
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name: name(i) },
            spec: {
              schedulingGates: [{ name: "edgeplane.dev/dashboard-test" }],
              containers: [{ name: "main", image: "127.0.0.1:5000/edgeplane/busybox:1" }],
            },
          });
          expect(r.status, r.text).toBe(201);
        }
      };
      await Promise.all(Array.from({ length: 16 }, create));

      // how many rows the page drew first
      page.on("request", onRequest);
      await page.evaluate(() => {
        const w = window as any;
        w.__firstDrawn = 0;
        const o = new MutationObserver(() => {
          const n = document.querySelectorAll("table[data-table=pods] tbody tr[data-key]").length;
          if (n > 0 && !w.__firstDrawn) {
            w.__firstDrawn = n;
            o.disconnect();
          }
        });
        o.observe(document.querySelector("#view")!, { subtree: true, childList: true });
      });
      await page.goto(`${t.url}/dashboard/#/ns/${many}`);
      await page.waitForFunction(
        (n) => document.querySelectorAll("table[data-table=pods] tbody tr[data-key]").length === n,
        N,
        { timeout: 30_000 },
      );
      page.off("request", onRequest);
      expect(await text("h2 .count")).toBe(`(${N})`);
      // a first page with a limit, then the rest with its continue token, both as Tables
      const table = "application/json;as=Table;v=v1;g=meta.k8s.io";
      expect(
        lists.map((l) => [l.url.searchParams.get("limit"), !!l.url.searchParams.get("continue"), l.accept]),
      ).toEqual([
        ["100", false, table],
        [null, true, table],
      ]);
      expect(await page.evaluate(() => (window as any).__firstDrawn)).toBe(100);
      // every pod, in order, once
      const keys = await page.$$eval("table[data-table=pods] tbody tr[data-key]", (rows) =>
        rows.map((r) => r.getAttribute("data-key")),
      );
      expect(keys).toEqual(Array.from({ length: N }, (_, i) => `${many}/${name(i)}`));

      // a change to a pod from the second page shows in its row, without a reload
      await page.evaluate(() => {
        (window as any).__sameDocument = true;
      });
      const target = name(950);
      const patched = await api(
        t,
        "PATCH",
        `/api/v1/namespaces/${many}/pods/${target}/status`,
        {
          status: {
            containerStatuses: [
              {
                name: "main",
                image: "x",
                imageID: "",
                ready: false,
                restartCount: 3,
                state: { waiting: { reason: "PagedChange" } },
              },
            ],
          },
        },
        { "content-type": "application/merge-patch+json" },
      );
      expect(patched.status, patched.text).toBe(200);
      await page.waitForSelector(`tr[data-key="${many}/${target}"] [data-status=PagedChange]`, {
        timeout: 10_000,
      });
      const row = await page.$eval(`tr[data-key="${many}/${target}"]`, (e) =>
        Array.from(e.children).map((c) => c.textContent),
      );
      expect(row).toEqual([target, "0/1", "PagedChange", "3", "", "", expect.any(String)]);
      // and a deleted one leaves
      const gone = await api(t, "DELETE", `/api/v1/namespaces/${many}/pods/${name(999)}`);
      expect(gone.status, gone.text).toBe(200);
      await page.waitForFunction(
        (n) => document.querySelectorAll("table[data-table=pods] tbody tr[data-key]").length === n,
        N - 1,
      );
      expect(await text("h2 .count")).toBe(`(${N - 1})`);
      expect(await page.evaluate(() => (window as any).__sameDocument)).toBe(true);
      await shot("10-pods-paged");
    } finally {
      page.off("request", onRequest);
      // leave the page before the namespace's pods go, and scope the views to all again
      await page.goto(`${t.url}/dashboard/#/ns/`);
      await page.goto(`${t.url}/dashboard/#/nodes`);
      await api(t, "DELETE", `/api/v1/namespaces/${many}`);
    }
  }, 180_000); // 1,000 creates on a shared server that other suites load too

  it("a user with view in one namespace sees it, and is told Forbidden elsewhere", async () => {
    for (const args of [
      ["create", "serviceaccount", "viewer", "-n", ns],
      ["create", "rolebinding", "viewer", "--clusterrole=view", `--serviceaccount=${ns}:viewer`, "-n", ns],
    ]) {
      const r = await kubectl(t, args);
      expect(r.code, r.stderr).toBe(0);
    }
    const tok = await kubectl(t, ["create", "token", "viewer", "-n", ns]);
    expect(tok.code, tok.stderr).toBe(0);

    const ctx = await browser.newContext({ viewport: VIEWPORT });
    try {
      const p = await ctx.newPage();
      await p.goto(`${t.url}/dashboard/`);
      await p.fill("#token", tok.stdout.trim());
      await p.click("#login-submit");
      await p.waitForFunction(() => document.querySelector("#who")?.textContent?.includes("viewer"));
      expect(await p.$eval("#who", (e) => e.textContent)).toContain(`system:serviceaccount:${ns}:viewer`);
      // all namespaces: RBAC says no, in words
      await p.waitForFunction(() =>
        (document.querySelector("#view .error")?.textContent ?? "").includes("Forbidden"),
      );
      await p.screenshot({ path: join(ARTIFACTS, "08-viewer-forbidden.png"), fullPage: true });
      // its own namespace: the pod is there
      await p.fill("#ns", ns);
      await p.$eval("#ns", (e) => e.dispatchEvent(new Event("change")));
      await p.waitForSelector(`tr[data-key="${ns}/web"]`);
      await p.screenshot({ path: join(ARTIFACTS, "09-viewer-namespace.png"), fullPage: true });
      // and its pod page draws the flow
      await p.goto(`${t.url}/dashboard/#/pod/${ns}/web`);
      await p.waitForSelector("ol.flow li[data-stage=ready][data-state=done]");
    } finally {
      await ctx.close();
    }
  });
});
