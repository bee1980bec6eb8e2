// edgelet's configuration: command-line flags with their defaults.

import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { BACKENDS, type Backend } from "../../api/network";

export type RuntimeKind = "containerd" | "simulated";

export interface EdgeletConfig {
  server: string;
  token: string;
  nodeName: string;
  runtime: RuntimeKind;
  containerdSocket: string;
  root: string;
  /** Explicit pod CIDR (an override); unset, the node waits for the one the control plane allocates. */
  podCIDR?: string;
  /** host-local IPAM's dataDir (default <root>/cni/networks). */
  cniIpamDir: string;
  /** How this node routes to the others' pod CIDRs; unset: the cluster's (kube-system/edgeplane-network). */
  podNetwork?: Backend;
  /** Explicit node IP; default 127.0.0.1... see node-status.ts nodeIP(). */
  nodeIP?: string;
  cniConfDir: string;
  /** the Linux bridge the CNI config puts pods on (default edgeplane0) */
  cniBridge: string;
  /** cgroupfs path under which QoS and pod cgroups live. */
  cgroupRoot: string;
  /** Overrides the sandbox image containerd reports. */
  podInfraImage?: string;
  leaseSeconds: number;
  statusSeconds: number;
  resyncSeconds: number;
  /** how often the node reports its and its pods' CPU and memory use (0: never) */
  metricsSeconds: number;
  relistMs: number;
  labels: Record<string, string>;
  ca?: string;
  insecure: boolean;
  /** with a bootstrap token: ask for a client certificate through a CSR (TLS bootstrap) */
  clientCertificate: boolean;
  cpuManagerPolicy: "none" | "static";
  verbose: boolean;
  /** Services, cluster DNS and NetworkPolicy on this node (agent/network); off: none of them */
  proxy: boolean;
  /** the node's nftables table (family ip) */
  nftTable: string;
  /** the node-local DNS server's port on the node IP (0: any free port; kube-dns traffic is sent to it) */
  clusterDnsPort: number;
  /** the apiserver relay's port on the node IP (0: any free port; `kubernetes` Service traffic is sent to it) */
  apiserverRelayPort: number;
  /** NodePorts answer on 127.0.0.1 (sets route_localnet=1 while the edgelet runs) */
  localhostNodePorts: boolean;
}

export const DEFAULTS = {
  runtime: "containerd" as RuntimeKind,
  containerdSocket: "unix:///run/edgeplane/containerd.sock",
  root: "/var/lib/edgeplane/edgelet",
  cniConfDir: "/etc/edgeplane/net.d",
  cniBridge: "edgeplane0",
  cgroupRoot: "/edgeplane",
  leaseSeconds: 10,
  statusSeconds: 10,
  resyncSeconds: 20,
  metricsSeconds: 15,
  relistMs: 1000,
  nftTable: "edgeplane",
};

export const USAGE = `usage: edgelet join --server URL --token TOKEN [options]
  --name NAME                node name (default: the host name)
  --runtime containerd|simulated
  --containerd-socket PATH   CRI endpoint (default ${DEFAULTS.containerdSocket})
  --root DIR                 state directory (default ${DEFAULTS.root})
  --pod-cidr CIDR            this node's pod CIDR, overriding the one the control plane allocates
  --pod-network BACKEND      auto|host-gw|vxlan|none (default: the cluster's, kube-system/edgeplane-network)
  --node-ip IP               InternalIP to report (and the address peers route pod traffic to)
  --cni-conf-dir DIR         (default ${DEFAULTS.cniConfDir})
  --cni-bridge NAME          the bridge pods are put on (default ${DEFAULTS.cniBridge}; another name
                             lets a second node share a network namespace, as tests do)
  --cni-ipam-dir DIR         host-local IPAM state (default <root>/cni/networks)
  --cgroup-root PATH         cgroupfs parent of the QoS and pod cgroups (default ${DEFAULTS.cgroupRoot})
  --pod-infra-image IMAGE    sandbox image to pre-pull (default: containerd's)
  --cpu-manager-policy none|static
  --metrics-seconds N        report CPU and memory use every N seconds (default ${DEFAULTS.metricsSeconds}; 0: never)
  --node-labels k=v,k=v
  --ca FILE | --insecure     TLS options for an https server
  --client-certificate       with a bootstrap token: authenticate with a client certificate
                             issued through a CertificateSigningRequest (https servers)
  --proxy on|off             Services, cluster DNS, NetworkPolicy on this node (default on; needs nft)
  --nft-table NAME           the node's nftables table (default ${DEFAULTS.nftTable})
  --cluster-dns-port N       port of the node-local DNS server on the node IP (default: any free one)
  --apiserver-relay-port N   port of the relay pods reach the apiserver through (default: any free one)
  --localhost-nodeports true|false  NodePorts on 127.0.0.1 too (default true)
  -v, --verbose`;

export function parseConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): EdgeletConfig {
  const { values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      server: { type: "string" },
      token: { type: "string" },
      name: { type: "string" },
      runtime: { type: "string" },
      "containerd-socket": { type: "string" },
      root: { type: "string" },
      "pod-cidr": { type: "string" },
      "pod-network": { type: "string" },
      "cni-ipam-dir": { type: "string" },
      "node-ip": { type: "string" },
      "cni-conf-dir": { type: "string" },
      "cni-bridge": { type: "string" },
      "cgroup-root": { type: "string" },
      "pod-infra-image": { type: "string" },
      "cpu-manager-policy": { type: "string" },
      "node-labels": { type: "string" },
      "lease-seconds": { type: "string" },
      "status-seconds": { type: "string" },
      "resync-seconds": { type: "string" },
      "metrics-seconds": { type: "string" },
      ca: { type: "string" },
      insecure: { type: "boolean" },
      "client-certificate": { type: "boolean" },
      verbose: { type: "boolean", short: "v" },
      proxy: { type: "string" },
      "nft-table": { type: "string" },
      "cluster-dns-port": { type: "string" },
      "apiserver-relay-port": { type: "string" },
      "localhost-nodeports": { type: "string" },
    },
  });
  const server = values.server ?? env.EDGELET_SERVER;
  const token = values.token ?? env.EDGELET_TOKEN;
  if (!server) throw new Error("--server is required");
  if (!token) throw new Error("--token is required");
  const runtime = (values.runtime ?? DEFAULTS.runtime) as RuntimeKind;
  if (runtime !== "containerd" && runtime !== "simulated")
    throw new Error(`--runtime must be containerd or simulated, got ${runtime}`);
  const cpuPolicy = values["cpu-manager-policy"] ?? "none";
  if (cpuPolicy !== "none" && cpuPolicy !== "static")
    throw new Error("--cpu-manager-policy must be none or static");
  const labels: Record<string, string> = {};
  for (const kv of (values["node-labels"] ?? "").split(",").filter(Boolean)) {
    const i = kv.indexOf("=");
    labels[i < 0 ? kv : kv.slice(0, i)] = i < 0 ? "" : kv.slice(i + 1);
  }
  const num = (v: string | undefined, d: number) => (v === undefined ? d : Number(v));
  const proxy = values.proxy ?? env.EDGELET_PROXY ?? "on";
  if (proxy !== "on" && proxy !== "off") throw new Error(`--proxy must be on or off, got ${proxy}`);
  const nftTable = values["nft-table"] ?? env.EDGELET_NFT_TABLE ?? DEFAULTS.nftTable;
  if (!/^[a-zA-Z][a-zA-Z0-9_-]{0,31}$/.test(nftTable))
    throw new Error(`--nft-table must be a letter then up to 31 letters, digits, _ or -, got ${nftTable}`);
  const port = (flag: string, v: string | undefined) => {
    const n = num(v, 0);
    if (!Number.isInteger(n) || n < 0 || n > 65535)
      throw new Error(`--${flag} must be a port number, got ${v}`);
    return n;
  };
  const podNetwork = values["pod-network"];
  if (podNetwork !== undefined && !BACKENDS.includes(podNetwork as Backend))
    throw new Error(`--pod-network must be one of ${BACKENDS.join(", ")}, got ${podNetwork}`);
  const podCIDR = values["pod-cidr"];
  if (podCIDR !== undefined && !/^\d+\.\d+\.\d+\.\d+\/\d{1,2}$/.test(podCIDR))
    throw new Error(`--pod-cidr must be an IPv4 CIDR, got ${podCIDR}`);
  const root = values.root ?? DEFAULTS.root;
  const metricsSeconds = num(
    values["metrics-seconds"] ?? env.EDGELET_METRICS_SECONDS,
    DEFAULTS.metricsSeconds,
  );
  if (!(metricsSeconds === 0 || (metricsSeconds >= 1 && metricsSeconds <= 3600)))
    throw new Error(`--metrics-seconds must be 0 or 1 to 3600, got ${values["metrics-seconds"]}`);
  return {
    server,
    token,
    nodeName: (values.name ?? hostname()).toLowerCase(),
    runtime,
    containerdSocket: values["containerd-socket"] ?? DEFAULTS.containerdSocket,
    root,
    podCIDR,
    cniIpamDir: values["cni-ipam-dir"] ?? join(root, "cni", "networks"),
    podNetwork: podNetwork as Backend | undefined,
    nodeIP: values["node-ip"],
    cniConfDir: values["cni-conf-dir"] ?? DEFAULTS.cniConfDir,
    cniBridge: values["cni-bridge"] ?? DEFAULTS.cniBridge,
    cgroupRoot: values["cgroup-root"] ?? DEFAULTS.cgroupRoot,
    podInfraImage: values["pod-infra-image"],
    leaseSeconds: num(values["lease-seconds"], DEFAULTS.leaseSeconds),
    statusSeconds: num(values["status-seconds"], DEFAULTS.statusSeconds),
    resyncSeconds: num(values["resync-seconds"], DEFAULTS.resyncSeconds),
    metricsSeconds,
    relistMs: DEFAULTS.relistMs,
    labels,
    ca: values.ca === undefined ? undefined : caBundle(values.ca),
    insecure: values.insecure ?? false,
    clientCertificate: values["client-certificate"] ?? env.EDGELET_CLIENT_CERTIFICATE === "1",
    cpuManagerPolicy: cpuPolicy,
    verbose: values.verbose ?? false,
    proxy: proxy === "on",
    nftTable,
    clusterDnsPort: port("cluster-dns-port", values["cluster-dns-port"]),
    apiserverRelayPort: port("apiserver-relay-port", values["apiserver-relay-port"]),
    localhostNodePorts: (values["localhost-nodeports"] ?? "true") !== "false",
  };
}

/** --ca names a PEM file, as its usage says; PEM text given inline is taken as it is. */
function caBundle(value: string): string {
  if (value.includes("-----BEGIN")) return value;
  try {
    return readFileSync(value, "utf8");
  } catch (e) {
    throw new Error(`--ca ${value}: ${(e as Error).message}`);
  }
}
