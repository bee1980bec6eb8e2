// The proxier's sync loop against the kernel, in a network namespace of the test's own: the
// first sync loads the whole table, later ones only what changed; a partial update the kernel
// refuses (the table was changed behind the proxier's back) is followed by a whole-table
// replace; an apply that fails leaves the last good table in place and is retried.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { groupSlices } from "../../../agent/network/endpoints";
import { addBase, addServices, type ServicesConfig } from "../../../agent/network/proxier/compile";
import { NftSession, runNft } from "../../../agent/network/proxier/nft";
import { Proxier, type SyncResult } from "../../../agent/network/proxier/proxier";
import { slice, svc } from "./fixtures";

const nft = ["/usr/sbin/nft", "/usr/bin/nft"].find((p) => existsSync(p));
const root = process.getuid?.() === 0;
if (!nft || !root) console.warn("SKIPPED: proxier loop: needs nft and root (network namespaces)");

const NS = `pxloop${process.pid}`;
const TABLE = "edgeplane";
const cfg: ServicesConfig = { nodeName: "n1", localhostNodePorts: false, redirects: new Map() };
const inNs = (script: string) => runNft(script, ["netns", "exec", NS, "nft", "-f", "-"], "ip");
// partial syncs go through one nft process kept open, as the edgelet runs them
const session = new NftSession(["ip", "netns", "exec", NS, "nft"]);
const list = () =>
  execFileSync("ip", ["netns", "exec", NS, "nft", "list", "table", "ip", TABLE], { encoding: "utf8" });

describe.skipIf(!nft || !root)("proxier sync loop (real nftables, own network namespace)", () => {
  let services: any[] = [];
  let slices: any[] = [];
  let fail = false;
  const results: SyncResult[] = [];
  const proxier = new Proxier({
    table: TABLE,
    log: () => {},
    compile: (rs) => {
      addBase(rs, cfg);
      addServices(rs, cfg, services, groupSlices(slices));
    },
    onSync: (r) => results.push(r),
    nft: (s) =>
      fail ? Promise.resolve({ ok: false, error: "Error: Could not process rule: refused", ms: 0 }) : inNs(s),
  });
  const a = svc("a", { clusterIP: "10.96.0.50", ports: [{ port: 80, protocol: "TCP" }] });
  const b = svc("b", { clusterIP: "10.96.0.51", ports: [{ port: 80, protocol: "TCP" }] });
  const sl = (name: string, ip: string) => slice(name, [{ port: 8080, protocol: "TCP" }], [{ ip }]);

  beforeAll(() => execFileSync("ip", ["netns", "add", NS]));
  afterAll(async () => {
    await proxier.stop(true);
    session.close();
    execFileSync("ip", ["netns", "del", NS]);
  });

  it("loads the whole table, then applies only what changed", async () => {
    services = [a];
    slices = [sl("a", "10.244.0.5")];
    expect(await proxier.syncNow()).toMatchObject({ ok: true, mode: "full" });
    expect(list()).toContain("dnat to 10.244.0.5:8080");
    services = [a, b];
    slices = [sl("a", "10.244.0.5"), sl("b", "10.244.0.6")];
    expect(await proxier.syncNow()).toMatchObject({ ok: true, mode: "diff" });
    expect(list()).toContain("dnat to 10.244.0.6:8080");
    expect(await proxier.syncNow()).toMatchObject({ ok: true, mode: "none" });
  });

  it("replaces the whole table when a partial update is refused", async () => {
    // someone else's rule jumps to Service a's chain: deleting that chain alone fails
    execFileSync("ip", [
      "netns",
      "exec",
      NS,
      "nft",
      "add chain ip edgeplane intruder; add rule ip edgeplane intruder jump svc-ns/a/tcp/80",
    ]);
    services = [b];
    slices = [sl("b", "10.244.0.6")];
    const before = results.length;
    const r = await proxier.syncNow();
    expect(r).toMatchObject({ ok: true, mode: "full" });
    expect(results.length).toBe(before + 1);
    expect(list()).not.toContain("intruder");
    expect(list()).not.toContain("10.244.0.5");
  });

  it("a failed apply keeps the last good table and is retried until it applies", async () => {
    const good = list();
    fail = true;
    services = [a, b];
    slices = [sl("a", "10.244.0.9"), sl("b", "10.244.0.6")];
    proxier.requestSync();
    await until(() => results.at(-1)?.ok === false);
    expect(results.at(-1)!.error).toContain("refused");
    expect(list()).toBe(good);
    expect(proxier.current?.chains.has("svc-ns/a/tcp/80")).toBe(false);
    fail = false;
    await until(() => results.at(-1)?.ok === true, 5000);
    expect(list()).toContain("dnat to 10.244.0.9:8080");
  });

  it("the kept-open nft process: one transaction per script, its error reported, the next one fine", async () => {
    const t = "ip edgeplane";
    const bad = await session.apply(`add chain ${t} sess-a\nadd rule ${t} no-such-chain counter`);
    expect(bad.ok).toBe(false);
    expect(bad.error).toContain("No such file or directory");
    expect(list()).not.toContain("sess-a"); // all or nothing
    expect(await session.apply(`add chain ${t} sess-b\nadd rule ${t} sess-b counter`)).toMatchObject({
      ok: true,
    });
    expect(list()).toContain("sess-b");
    expect(await session.apply(`delete chain ${t} sess-b`)).toMatchObject({ ok: true });
  });

  it("stop removes the table", async () => {
    await proxier.stop(true);
    expect(
      execFileSync("ip", ["netns", "exec", NS, "nft", "list", "tables"], { encoding: "utf8" }),
    ).not.toContain(TABLE);
  });
});

async function until(pred: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}
