// The pod network across nodes, as flannel runs it on every node: this node publishes how it is
// reached (backend, address, VTEP MAC) on its Node, watches every Node, and keeps the kernel's
// routes, neighbour and forwarding entries equal to the plan (plan.ts) as nodes come and go.
// Routes it owns carry their own protocol number, so it lists and removes only its own. On
// exit it leaves what it programmed, as flannel does: running pods keep their network while the
// agent restarts (whoever removes the node's namespace or machine removes the rest).
import { writeFileSync } from "node:fs";
import { ANNOTATIONS, type Backend, formatCIDR, type NetworkSettings, parseCIDR } from "../../api/network";
import type { Reply } from "../lib/http";
import { Informer, type WatchClient } from "../lib/informer";
import { asApiBody, type Node } from "../lib/kube-types";
import { batch, type FdbEntry, type IpLink, type IpNeighbour, type IpRoute, ipJson, run } from "./exec";
import { applyMasquerade } from "./masquerade";
import { type Peer, type Plan, peerOf, planRoutes, type Self, vtepAddress, vtepMAC } from "./plan";

/** The protocol number of the routes this agent owns (`ip route show proto 77`). */
export const ROUTE_PROTO = "77";
/** VXLAN costs 50 bytes of every packet (outer IPv4 20, UDP 8, VXLAN 8, inner Ethernet 14). */
export const VXLAN_OVERHEAD = 50;

export interface Uplink {
  dev: string;
  subnet: ReturnType<typeof parseCIDR> & {};
  mtu: number;
}

/** The interface holding the node's address (its subnet is where host-gw peers are). */
export async function findUplink(ip: string): Promise<Uplink> {
  const links = await ipJson<IpLink>(["-4", "addr", "show"]);
  for (const l of links) {
    for (const a of l.addr_info ?? []) {
      if (a.family === "inet" && a.local === ip) {
        const subnet = parseCIDR(`${ip}/${a.prefixlen}`)!;
        return { dev: l.ifname, subnet, mtu: Number(l.mtu) || 1500 };
      }
    }
  }
  // an address the node does not hold (behind NAT): no peer shares its subnet
  const dflt = (await ipJson<IpRoute>(["-4", "route", "show", "default"]))[0];
  if (!dflt?.dev) throw new Error(`no interface holds ${ip} and there is no default route`);
  const link = (await ipJson<IpLink>(["link", "show", "dev", dflt.dev]))[0];
  return { dev: dflt.dev, subnet: parseCIDR(`${ip}/32`)!, mtu: Number(link?.mtu) || 1500 };
}

/** The pods' MTU for a backend: the uplink's, less VXLAN's overhead when VXLAN may carry them. */
export function podMTU(backend: Backend, uplinkMTU: number): number {
  return backend === "vxlan" || backend === "auto" ? uplinkMTU - VXLAN_OVERHEAD : uplinkMTU;
}

export interface PodNetworkOptions {
  api: WatchClient & { mergePatch(path: string, patch: unknown): Promise<Reply> };
  nodeName: string;
  nodeIP: string;
  podCIDR: string;
  backend: Exclude<Backend, "none">;
  settings: NetworkSettings;
  uplink: Uplink;
  log: (m: string) => void;
  /** full re-check of the kernel's state (someone may remove a route by hand) */
  resyncMs?: number;
}

export interface PodNetwork {
  /** resolves once the first plan after the first Node list is applied */
  ready: Promise<void>;
  /** the latest plan applied */
  plan(): Plan | undefined;
  /** applies the plan now (tests, and the resync) */
  sync(): Promise<void>;
  stop(): Promise<void>;
}

export async function startPodNetwork(o: PodNetworkOptions): Promise<PodNetwork> {
  const { log } = o;
  const cidr = parseCIDR(o.podCIDR);
  if (!cidr) throw new Error(`podCIDR ${o.podCIDR} is not an IPv4 CIDR`);
  const vxlanDevice = o.backend === "host-gw" ? undefined : `edgeplane.${o.settings.vxlanVNI}`;
  const mac = vxlanDevice ? vtepMAC(o.nodeName, formatCIDR(cidr)) : undefined;
  const self: Self = {
    name: o.nodeName,
    backend: o.backend,
    ip: o.nodeIP,
    subnet: o.uplink.subnet,
    uplink: o.uplink.dev,
    vxlanDevice,
  };

  // forwarding between the pods' bridge, the uplink and the VXLAN device
  writeFileSync("/proc/sys/net/ipv4/ip_forward", "1");
  await applyMasquerade(o.settings.clusterCIDR);
  if (vxlanDevice && mac) await ensureVtep(vxlanDevice, mac, o);

  const annotations = {
    [ANNOTATIONS.backend]: o.backend,
    [ANNOTATIONS.publicIP]: o.nodeIP,
    [ANNOTATIONS.vtepMAC]: mac ?? null,
  };
  const publish = async () => {
    const r = await o.api.mergePatch(`/api/v1/nodes/${encodeURIComponent(o.nodeName)}`, {
      metadata: { annotations },
    });
    if (r.status !== 200)
      throw new Error(
        `publishing the pod network on node ${o.nodeName}: ${r.status} ${r.json?.message ?? ""}`,
      );
  };
  await publish();

  const peers = new Map<string, Peer>();
  let published = true;
  let current: Plan | undefined;
  let lastReport = "";
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;

  const observe = (item: unknown, deleted: boolean) => {
    const node = asApiBody(item) as Node | undefined; // the nodes informer serves Nodes
    const name = node?.metadata?.name;
    if (!node || !name) return;
    if (name === o.nodeName) {
      // re-registered (deleted and made again) or edited: publish again
      const ann = node.metadata?.annotations ?? {};
      if (!deleted && (ann[ANNOTATIONS.publicIP] !== o.nodeIP || ann[ANNOTATIONS.backend] !== o.backend))
        published = false;
      return;
    }
    const p = deleted ? undefined : peerOf(node);
    if (p) peers.set(name, p);
    else peers.delete(name);
  };

  const apply = async () => {
    if (!published) {
      await publish();
      published = true;
    }
    const plan = planRoutes(self, [...peers.values()]);
    await reconcile(self, plan);
    current = plan;
    const report = plan.unreachable.map((u) => `${u.name}: ${u.reason}`).join("; ");
    if (report !== lastReport) {
      if (report) log(`pod network: peers not routed: ${report}`);
      lastReport = report;
    }
  };

  /** one apply at a time; changes meanwhile make one more */
  const sync = (): Promise<void> => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      try {
        do {
          again = false;
          await apply().catch((e) => log(`pod network: ${(e as Error).message}`));
        } while (again && !stopped);
      } finally {
        running = undefined;
      }
    })();
    return running;
  };
  const soon = () => {
    if (stopped || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      void sync();
    }, 10);
  };

  let markReady!: () => void;
  const ready = new Promise<void>((r) => (markReady = r));
  const informer = new Informer(
    o.api,
    "/api/v1/nodes",
    {},
    {
      onList: (items) => {
        peers.clear();
        for (const n of items) observe(n, false);
        void sync().then(markReady);
      },
      onEvent: (type, node) => {
        observe(node, type === "DELETED");
        soon();
      },
    },
    (m) => log(`pod network: ${m}`),
  );
  informer.start();
  const resync = setInterval(() => void sync(), o.resyncMs ?? 30_000);
  log(
    `pod network: backend ${o.backend}, uplink ${o.uplink.dev} (${formatCIDR(o.uplink.subnet)}, mtu ${o.uplink.mtu})${vxlanDevice ? `, VTEP ${vxlanDevice} ${mac}` : ""}`,
  );
  return {
    ready,
    plan: () => current,
    sync,
    async stop() {
      stopped = true;
      clearInterval(resync);
      clearTimeout(timer);
      await informer.stop();
      await running;
    },
  };
}

/** The VXLAN device: made (or made again when its settings differ), up, with the VTEP address. */
async function ensureVtep(dev: string, mac: string, o: PodNetworkOptions): Promise<void> {
  const mtu = o.uplink.mtu - 50;
  const want = { id: o.settings.vxlanVNI, port: o.settings.vxlanPort, local: o.nodeIP, link: o.uplink.dev };
  const have = (await ipJson<IpLink>(["-d", "link", "show", "dev", dev]).catch((): IpLink[] => []))[0];
  const info = have?.linkinfo?.info_data;
  const same =
    have &&
    have.linkinfo?.info_kind === "vxlan" &&
    info?.id === want.id &&
    info?.port === want.port &&
    info?.local === want.local &&
    info?.link === want.link &&
    info?.learning === false;
  if (have && !same) await run("ip", ["link", "del", dev]);
  if (!same)
    await run("ip", [
      "link",
      "add",
      dev,
      "type",
      "vxlan",
      "id",
      String(want.id),
      "local",
      want.local,
      "dev",
      want.link,
      "dstport",
      String(want.port),
      "nolearning",
    ]);
  await run("ip", ["link", "set", "dev", dev, "address", mac, "mtu", String(mtu), "up"]);
  const vtep = `${vtepAddress(o.podCIDR)}/32`;
  const addrs = (await ipJson<IpLink>(["-4", "addr", "show", "dev", dev]))[0]?.addr_info ?? [];
  const stale = addrs.filter((a) => `${a.local}/${a.prefixlen}` !== vtep);
  for (const a of stale) await run("ip", ["addr", "del", `${a.local}/${a.prefixlen}`, "dev", dev]);
  if (stale.length === addrs.length) await run("ip", ["addr", "add", vtep, "dev", dev]);
}

/** Makes the kernel hold exactly the plan's routes (of ours), neighbours and forwarding entries. */
async function reconcile(self: Self, plan: Plan): Promise<void> {
  const routes = await ipJson<IpRoute>(["-4", "route", "show", "proto", ROUTE_PROTO]);
  const haveRoute = new Map<string, string>();
  for (const r of routes) haveRoute.set(r.dst, `${r.gateway} ${r.dev} ${(r.flags ?? []).includes("onlink")}`);
  const wantRoute = new Map(plan.routes.map((r) => [r.dst, r]));
  const ipLines: string[] = [];
  const bridgeLines: string[] = [];
  const dev = self.vxlanDevice;
  if (dev) {
    const neigh = await ipJson<IpNeighbour>(["-4", "neigh", "show", "dev", dev]);
    const wantNeigh = new Map(plan.neighbors.map((n) => [n.ip, n.mac]));
    for (const n of neigh) if (!wantNeigh.has(n.dst)) ipLines.push(`neigh del ${n.dst} dev ${dev}`);
    const haveNeigh = new Map(
      neigh.filter((n) => (n.state ?? []).includes("PERMANENT")).map((n) => [n.dst, n.lladdr]),
    );
    for (const [ip, mac] of wantNeigh)
      if (haveNeigh.get(ip) !== mac)
        ipLines.push(`neigh replace ${ip} lladdr ${mac} dev ${dev} nud permanent`);
    const fdb = JSON.parse((await run("bridge", ["-j", "fdb", "show", "dev", dev])) || "[]") as FdbEntry[];
    const wantFdb = new Map(plan.fdb.map((f) => [f.mac, f.dst]));
    for (const f of fdb)
      if (f.dst && wantFdb.get(f.mac) !== f.dst) bridgeLines.push(`fdb del ${f.mac} dev ${dev} dst ${f.dst}`);
    const haveFdb = new Set(fdb.filter((f) => f.dst).map((f) => `${f.mac} ${f.dst}`));
    for (const [m, dst] of wantFdb)
      if (!haveFdb.has(`${m} ${dst}`)) bridgeLines.push(`fdb replace ${m} dev ${dev} dst ${dst}`);
  }
  // the forwarding and neighbour entries first: a route is never used before its next hop is known
  await batch("bridge", bridgeLines);
  const routeLines: string[] = [];
  for (const [dst, r] of wantRoute)
    if (haveRoute.get(dst) !== `${r.via} ${r.dev} ${!!r.onlink}`)
      routeLines.push(
        `route replace ${dst} via ${r.via} dev ${r.dev}${r.onlink ? " onlink" : ""} proto ${ROUTE_PROTO}`,
      );
  for (const dst of haveRoute.keys())
    if (!wantRoute.has(dst)) routeLines.push(`route del ${dst} proto ${ROUTE_PROTO}`);
  // neighbours before routes that need them; stale neighbours after the routes that used them are gone
  const adds = ipLines.filter((l) => l.startsWith("neigh replace"));
  const dels = ipLines.filter((l) => l.startsWith("neigh del"));
  await batch("ip", [...adds, ...routeLines, ...dels]);
}
