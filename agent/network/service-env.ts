// The Service environment variables the kubelet gives every container (pkg/kubelet/envvars):
// for each Service of the pod's namespace that has a cluster IP (and always the `kubernetes`
// Service of `default`, even with enableServiceLinks false): <SVC>_SERVICE_HOST,
// <SVC>_SERVICE_PORT, <SVC>_SERVICE_PORT_<NAME> per named port, and the Docker-link style
// <SVC>_PORT, <SVC>_PORT_<port>_<PROTO>{,_PROTO,_PORT,_ADDR}.
import type { Service } from "./types";

export interface EnvVar {
  key: string;
  value: string;
}

const MASTER_SERVICES = new Set(["kubernetes"]);

/** Upper case, '-' to '_' (the kubelet's makeEnvVariableName). */
export const envName = (s: string): string => s.toUpperCase().replaceAll("-", "_");

const hasClusterIP = (s: Service) => !!s.spec?.clusterIP && s.spec.clusterIP !== "None";

/** The Services a pod's containers are told about, by the kubelet's rules. */
export function servicesForPod(
  all: Iterable<Service>,
  namespace: string,
  enableServiceLinks: boolean,
): Service[] {
  const byName = new Map<string, Service>();
  for (const s of all) {
    if (!hasClusterIP(s)) continue;
    const name = s.metadata?.name ?? "";
    const ns = s.metadata?.namespace;
    if (ns === "default" && MASTER_SERVICES.has(name)) {
      if (!byName.has(name)) byName.set(name, s);
    } else if (ns === namespace && enableServiceLinks) byName.set(name, s);
  }
  return [...byName.values()].sort((a, b) => (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? ""));
}

export function serviceEnvVars(services: Service[]): EnvVar[] {
  const out: EnvVar[] = [];
  for (const s of services) {
    const ports = s.spec?.ports ?? [];
    if (!hasClusterIP(s) || ports.length === 0) continue;
    const ip = s.spec!.clusterIP!;
    const prefix = envName(s.metadata?.name ?? "");
    out.push({ key: `${prefix}_SERVICE_HOST`, value: ip });
    out.push({ key: `${prefix}_SERVICE_PORT`, value: String(ports[0]!.port) });
    for (const p of ports)
      if (p.name) out.push({ key: `${prefix}_SERVICE_PORT_${envName(p.name)}`, value: String(p.port) });
    ports.forEach((p, i) => {
      const proto = (p.protocol ?? "TCP").toLowerCase();
      const url = `${proto}://${ip}:${p.port}`;
      if (i === 0) out.push({ key: `${prefix}_PORT`, value: url });
      const pp = `${prefix}_PORT_${p.port}_${proto.toUpperCase()}`;
      out.push({ key: pp, value: url });
      out.push({ key: `${pp}_PROTO`, value: proto });
      out.push({ key: `${pp}_PORT`, value: String(p.port) });
      out.push({ key: `${pp}_ADDR`, value: ip });
    });
  }
  return out;
}
