// The node's part of cluster networking, assembled (kube-proxy + a node-local CoreDNS + a
// policy agent, in the edgelet): caches of the cluster's Services, EndpointSlices, Pods,
// Namespaces and NetworkPolicies; the nftables proxier that programs Services and policies
// into one table; the DNS server behind the kube-dns Service; the relay behind the
// `kubernetes` Service; and what pods get from them (DNS settings, Service variables).
import { readFileSync, writeFileSync } from "node:fs";
import type { Reply } from "../lib/http";
import type { WatchClient } from "../lib/informer";
import { stringData } from "../lib/kube-types";
import { ClusterDns } from "./dns/records";
import { DnsServer } from "./dns/server";
import { groupSlices } from "./endpoints";
import { addPolicies } from "./policy/compile";
import { addBase, addServices, dedupeElements, type Problem } from "./proxier/compile";
import { NftSession, nftVersion, runNft } from "./proxier/nft";
import { Proxier, type SyncResult } from "./proxier/proxier";
import { ApiserverRelay } from "./relay";
import { serviceEnvVars, servicesForPod } from "./service-env";
import { ClusterState } from "./state";
import { type Cidr, cidrContains, intToIp, isIPv4, parseCidr } from "./types";

export const NETWORK_CONFIGMAP = { namespace: "kube-system", name: "edgeplane-network" };
export const DEFAULT_DOMAIN = "cluster.local";
const DEFAULT_SERVICE_CIDR = "10.96.0.0/12";

/** What the control plane publishes in kube-system/edgeplane-network (the fields this part reads). */
export interface NetworkSettings {
  clusterDomain: string;
  /** the kube-dns Service's address */
  clusterDNS?: string;
  serviceCIDR?: string;
  clusterCIDR?: string;
}

export interface NodeNetworkOptions {
  client: WatchClient & {
    request(method: string, path: string, body?: unknown, contentType?: string): Promise<Reply>;
  };
  nodeName: string;
  nodeIP: string;
  /** the node's pod CIDR, the masquerade boundary when the cluster publishes none */
  podCIDR?: string;
  /** the --server URL the apiserver relay forwards to */
  server: string;
  /** nft table name (ip family) */
  table: string;
  dnsPort: number;
  relayPort: number;
  localhostNodePorts: boolean;
  log(m: string): void;
  /** a Warning event about an object (Node, Service, NetworkPolicy) */
  event(kind: string, namespace: string, name: string, reason: string, message: string, type?: string): void;
  /** the proxier's state changed (the edgelet posts it as a Node condition) */
  onHealth?(ok: boolean, message: string): void;
  coalesceMs?: number;
}

export interface NodeNetwork {
  state: ClusterState;
  proxier?: Proxier;
  dns?: DnsServer;
  relay?: ApiserverRelay;
  settings: NetworkSettings;
  /** the cluster DNS a ClusterFirst pod gets; undefined before kube-dns has an address */
  dnsSettings(): { server: string; domain: string } | undefined;
  serviceEnv(namespace: string, enableServiceLinks: boolean): Promise<{ key: string; value: string }[]>;
  /** the proxier's last sync */
  lastSync(): SyncResult | undefined;
  stop(): Promise<void>;
}

async function readSettings(opts: NodeNetworkOptions): Promise<NetworkSettings> {
  const { namespace, name } = NETWORK_CONFIGMAP;
  try {
    const r = await opts.client.request("GET", `/api/v1/namespaces/${namespace}/configmaps/${name}`);
    const d = (r.status === 200 ? stringData(r.json?.data) : undefined) ?? {};
    if (r.status !== 200 && r.status !== 404)
      opts.log(`reading ${namespace}/${name}: ${r.status} ${r.json?.message ?? ""}; using defaults`);
    return {
      clusterDomain: d.clusterDomain || DEFAULT_DOMAIN,
      clusterDNS: isIPv4(d.clusterDNS) ? d.clusterDNS : undefined,
      serviceCIDR: parseCidr(d.serviceCIDR)?.text,
      clusterCIDR: parseCidr(d.clusterCIDR)?.text,
    };
  } catch (e) {
    opts.log(`reading ${namespace}/${name}: ${(e as Error).message}; using defaults`);
    return { clusterDomain: DEFAULT_DOMAIN };
  }
}

const ROUTE_LOCALNET = "/proc/sys/net/ipv4/conf/all/route_localnet";

export async function startNodeNetwork(opts: NodeNetworkOptions): Promise<NodeNetwork> {
  const settings = await readSettings(opts);
  const state = new ClusterState(
    opts.client,
    ["services", "endpointslices", "pods", "namespaces", "networkpolicies"],
    (m) => opts.log(`network informer: ${m}`),
  );
  const reverse = (): Cidr[] =>
    [settings.serviceCIDR ?? DEFAULT_SERVICE_CIDR, settings.clusterCIDR ?? opts.podCIDR]
      .map((c) => parseCidr(c))
      .filter((c): c is Cidr => !!c);
  const records = new ClusterDns(state, settings.clusterDomain, reverse);
  const kubeDnsIP = () => {
    if (settings.clusterDNS) return settings.clusterDNS;
    const ip = state.get("services", "kube-system/kube-dns")?.spec?.clusterIP;
    return isIPv4(ip) ? ip : undefined;
  };
  // the pods' range: the cluster CIDR when this node's pods are in it (a node given a pod CIDR
  // of its own outside it, as nodes sharing one machine's bridge are, uses that instead)
  const masqueradeBoundary = (): string | undefined => {
    const cluster = parseCidr(settings.clusterCIDR);
    const mine = parseCidr(opts.podCIDR);
    if (cluster && mine && cidrContains(cluster, intToIp(mine.base))) return cluster.text;
    return mine?.text ?? cluster?.text;
  };
  const nftOk = await nftVersion();
  let proxier: Proxier | undefined;
  let dns: DnsServer | undefined;
  let relay: ApiserverRelay | undefined;
  let savedLocalnet: string | undefined;
  let closeSession = () => {};
  if (!nftOk) {
    opts.log(
      "*** nft not found: Services, cluster DNS and NetworkPolicy are OFF on this node (apt-get install nftables) ***",
    );
    opts.onHealth?.(false, "nft not found: Services and NetworkPolicy are not programmed on this node");
  } else {
    dns = new DnsServer({ host: opts.nodeIP, port: opts.dnsPort, records, log: opts.log });
    relay = new ApiserverRelay(
      ApiserverRelay.upstreamOf(opts.server),
      { host: opts.nodeIP, port: opts.relayPort },
      opts.log,
    );
    await dns.start();
    await relay.start();
    if (opts.localhostNodePorts) {
      try {
        const v = readFileSync(ROUTE_LOCALNET, "utf8").trim();
        if (v !== "1") {
          writeFileSync(ROUTE_LOCALNET, "1");
          savedLocalnet = v;
        }
      } catch (e) {
        opts.log(`route_localnet: ${(e as Error).message} (NodePorts on 127.0.0.1 will not answer)`);
      }
    }
    const reported = new Map<string, string>();
    const report = (
      p: Problem | { kind?: string; namespace: string; name: string; reason: string; message: string },
    ) => {
      const key = `${p.kind ?? "NetworkPolicy"}/${p.namespace}/${p.name}/${p.reason}`;
      if (reported.get(key) === p.message) return;
      reported.set(key, p.message);
      opts.event(p.kind ?? "NetworkPolicy", p.namespace, p.name, p.reason, p.message);
    };
    const redirects = new Map<string, { ip: string; port: number }>();
    redirects.set("default/kubernetes:TCP", { ip: opts.nodeIP, port: relay.port });
    redirects.set("kube-system/kube-dns:UDP", { ip: opts.nodeIP, port: dns.port });
    redirects.set("kube-system/kube-dns:TCP", { ip: opts.nodeIP, port: dns.port });
    let healthy: boolean | undefined;
    // partial syncs through one nft process kept open; whole tables through nft -f
    const session = new NftSession();
    closeSession = () => session.close();
    proxier = new Proxier({
      table: opts.table,
      nft: (script, full) => (full ? runNft(script) : session.apply(script)),
      coalesceMs: opts.coalesceMs,
      log: opts.log,
      compile: (rs) => {
        const cfg = {
          nodeName: opts.nodeName,
          clusterCIDR: masqueradeBoundary(),
          localhostNodePorts: opts.localhostNodePorts && savedLocalnet !== "error",
          redirects,
        };
        addBase(rs, cfg);
        addServices(rs, cfg, state.list("services"), groupSlices(state.list("endpointslices")), report);
        addPolicies(
          rs,
          opts.nodeName,
          state.list("networkpolicies"),
          state.list("pods"),
          state.list("namespaces"),
          report,
        );
        dedupeElements(rs);
      },
      onSync: (r) => {
        if (r.ok !== healthy) {
          healthy = r.ok;
          opts.onHealth?.(
            r.ok,
            r.ok ? "nftables rules applied" : `applying nftables rules failed: ${r.error}`,
          );
          if (!r.ok) opts.event("Node", "", opts.nodeName, "FailedToApplyNetworkRules", `nft: ${r.error}`);
        }
        if (!r.ok) opts.log(`proxier: ${r.mode} sync failed: ${r.error}`);
        else if (r.latencyMs > 100)
          opts.log(
            `proxier: slow ${r.mode} sync: ${r.latencyMs.toFixed(0)} ms from the change (compile ${r.compileMs.toFixed(0)} ms, nft ${r.applyMs.toFixed(0)} ms)`,
          );
      },
    });
    state.onChange(() => proxier!.requestSync());
  }
  state.start();
  // the first table waits for the first lists, so pods never see a table without their Services
  await Promise.race([state.synced, new Promise((r) => setTimeout(r, 30_000))]);
  if (proxier) {
    const r = await proxier.syncNow();
    opts.log(
      `proxier: table ip ${opts.table}: ${r.size.chains} chains, ${r.size.elements} map elements (${r.ok ? "applied" : `FAILED: ${r.error}`}, ${r.applyMs.toFixed(0)} ms); DNS on ${opts.nodeIP}:${dns?.port}, apiserver relay on ${opts.nodeIP}:${relay?.port}`,
    );
  }
  return {
    state,
    proxier,
    dns,
    relay,
    settings,
    dnsSettings: () => {
      if (!dns) return undefined;
      const server = kubeDnsIP();
      return server ? { server, domain: settings.clusterDomain } : undefined;
    },
    async serviceEnv(namespace, enableServiceLinks) {
      await Promise.race([state.synced, new Promise((r) => setTimeout(r, 10_000))]);
      return serviceEnvVars(servicesForPod(state.list("services"), namespace, enableServiceLinks));
    },
    lastSync: () => proxier?.last,
    async stop() {
      await state.stop();
      await proxier?.stop(true);
      closeSession();
      await dns?.stop();
      await relay?.stop();
      if (savedLocalnet !== undefined) {
        try {
          writeFileSync(ROUTE_LOCALNET, savedLocalnet);
        } catch {}
      }
    },
  };
}
