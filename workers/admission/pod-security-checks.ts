// The Pod Security Standards checks (baseline and restricted, version "latest"), as pure
// functions of a pod's metadata and spec. Each failing check gives a reason and a detail, in
// the words upstream's pod-security-admission uses.
import { isObj } from "./util";

export type Level = "privileged" | "baseline" | "restricted";
export interface Violation {
  reason: string;
  detail: string;
}

interface Ctr {
  c: Record<string, any>;
  name: string;
}

const quoteList = (names: string[]) => names.map((n) => JSON.stringify(n)).join(", ");
/** `container "a"` / `containers "a", "b"` */
const ctrs = (names: string[]) => `${names.length === 1 ? "container" : "containers"} ${quoteList(names)}`;

function allContainers(spec: any): Ctr[] {
  const out: Ctr[] = [];
  for (const key of ["initContainers", "containers", "ephemeralContainers"])
    for (const c of Array.isArray(spec?.[key]) ? spec[key] : [])
      if (isObj(c)) out.push({ c, name: String(c.name) });
  return out;
}

const BASELINE_CAPS = new Set([
  "AUDIT_WRITE",
  "CHOWN",
  "DAC_OVERRIDE",
  "FOWNER",
  "FSETID",
  "KILL",
  "MKNOD",
  "NET_BIND_SERVICE",
  "SETFCAP",
  "SETGID",
  "SETPCAP",
  "SETUID",
  "SYS_CHROOT",
]);
const SAFE_SYSCTLS = new Set([
  "kernel.shm_rmid_forced",
  "net.ipv4.ip_local_port_range",
  "net.ipv4.ip_unprivileged_port_start",
  "net.ipv4.tcp_syncookies",
  "net.ipv4.ping_group_range",
  "net.ipv4.ip_local_reserved_ports",
  "net.ipv4.tcp_keepalive_time",
  "net.ipv4.tcp_fin_timeout",
  "net.ipv4.tcp_keepalive_intvl",
  "net.ipv4.tcp_keepalive_probes",
]);
const SELINUX_TYPES = new Set([
  "",
  "container_t",
  "container_init_t",
  "container_kvm_t",
  "container_engine_t",
]);
const RESTRICTED_VOLUMES = new Set([
  "configMap",
  "csi",
  "downwardAPI",
  "emptyDir",
  "ephemeral",
  "persistentVolumeClaim",
  "projected",
  "secret",
]);

type Check = (meta: any, spec: any, cs: Ctr[]) => Violation | undefined;

const appArmor: Check = (meta, spec, cs) => {
  const bad: string[] = [];
  const fieldBad = (p: any) => isObj(p) && p.type === "Unconfined";
  if (fieldBad(spec?.securityContext?.appArmorProfile))
    bad.push('pod must not set securityContext.appArmorProfile.type to "Unconfined"');
  for (const { c, name } of cs)
    if (fieldBad(c.securityContext?.appArmorProfile))
      bad.push(`container "${name}" must not set securityContext.appArmorProfile.type to "Unconfined"`);
  const ann = isObj(meta?.annotations) ? meta.annotations : {};
  const forbiddenAnn = Object.entries(ann)
    .filter(
      ([k, v]) =>
        k.startsWith("container.apparmor.security.beta.kubernetes.io/") &&
        v !== "runtime/default" &&
        !String(v).startsWith("localhost/"),
    )
    .map(([k, v]) => `${k}="${v}"`)
    .sort();
  if (forbiddenAnn.length)
    bad.push(`${forbiddenAnn.length === 1 ? "annotation" : "annotations"} ${forbiddenAnn.join(", ")}`);
  return bad.length ? { reason: "forbidden AppArmor profile", detail: bad.join("; ") } : undefined;
};

const capabilitiesBaseline: Check = (_m, _s, cs) => {
  const bad: string[] = [];
  for (const { c, name } of cs) {
    const add = (
      Array.isArray(c.securityContext?.capabilities?.add) ? c.securityContext.capabilities.add : []
    ).filter((x: string) => !BASELINE_CAPS.has(x));
    if (add.length)
      bad.push(`container "${name}" must not include ${quoteList(add)} in securityContext.capabilities.add`);
  }
  return bad.length ? { reason: "non-default capabilities", detail: bad.join("; ") } : undefined;
};

const hostNamespaces: Check = (_m, spec) => {
  const set = ["hostNetwork", "hostPID", "hostIPC"].filter((k) => spec?.[k] === true).map((k) => `${k}=true`);
  return set.length ? { reason: "host namespaces", detail: set.join(", ") } : undefined;
};

const volumesOf = (spec: any): any[] => (Array.isArray(spec?.volumes) ? spec.volumes.filter(isObj) : []);

const hostPathVolumes: Check = (_m, spec) => {
  const names = volumesOf(spec)
    .filter((v) => isObj(v.hostPath))
    .map((v) => v.name);
  return names.length
    ? {
        reason: "hostPath volumes",
        detail: `${names.length === 1 ? "volume" : "volumes"} ${quoteList(names)}`,
      }
    : undefined;
};

const hostPorts: Check = (_m, _s, cs) => {
  const names: string[] = [];
  const ports: number[] = [];
  for (const { c, name } of cs) {
    const mine = (Array.isArray(c.ports) ? c.ports : [])
      .filter((p: any) => p?.hostPort)
      .map((p: any) => p.hostPort);
    if (mine.length) {
      names.push(name);
      ports.push(...mine);
    }
  }
  if (!names.length) return undefined;
  const verb = names.length === 1 ? "uses" : "use";
  return {
    reason: "hostPort",
    detail: `${ctrs(names)} ${verb} ${ports.length === 1 ? "hostPort" : "hostPorts"} ${ports.join(", ")}`,
  };
};

const privileged: Check = (_m, _s, cs) => {
  const names = cs.filter(({ c }) => c.securityContext?.privileged === true).map((x) => x.name);
  return names.length
    ? { reason: "privileged", detail: `${ctrs(names)} must not set securityContext.privileged=true` }
    : undefined;
};

const procMount: Check = (_m, _s, cs) => {
  const names = cs
    .filter(({ c }) => c.securityContext?.procMount && c.securityContext.procMount !== "Default")
    .map((x) => x.name);
  return names.length
    ? { reason: "procMount", detail: `${ctrs(names)} must not set securityContext.procMount to "Unmasked"` }
    : undefined;
};

const seLinux: Check = (_m, spec, cs) => {
  const who: string[] = [];
  const problems = new Set<string>();
  const inspect = (o: any) => {
    if (!isObj(o)) return false;
    const found: string[] = [];
    if (!SELINUX_TYPES.has(o.type ?? "")) found.push(`type "${o.type}"`);
    if (o.user) found.push(`user "${o.user}"`);
    if (o.role) found.push(`role "${o.role}"`);
    for (const f of found) problems.add(f);
    return found.length > 0;
  };
  const podBad = inspect(spec?.securityContext?.seLinuxOptions);
  const names = cs.filter(({ c }) => inspect(c.securityContext?.seLinuxOptions)).map((x) => x.name);
  if (!podBad && !names.length) return undefined;
  if (podBad) who.push("pod");
  if (names.length) who.push(ctrs(names));
  return {
    reason: "seLinuxOptions",
    detail: `${who.join(" and ")} set forbidden securityContext.seLinuxOptions: ${[...problems].join("; ")}`,
  };
};

const seccompBaseline: Check = (_m, spec, cs) => {
  const bad: string[] = [];
  if (spec?.securityContext?.seccompProfile?.type === "Unconfined")
    bad.push('pod must not set securityContext.seccompProfile.type to "Unconfined"');
  const names = cs
    .filter(({ c }) => c.securityContext?.seccompProfile?.type === "Unconfined")
    .map((x) => x.name);
  if (names.length)
    bad.push(`${ctrs(names)} must not set securityContext.seccompProfile.type to "Unconfined"`);
  return bad.length ? { reason: "seccompProfile", detail: bad.join("; ") } : undefined;
};

const sysctls: Check = (_m, spec) => {
  const bad = (Array.isArray(spec?.securityContext?.sysctls) ? spec.securityContext.sysctls : [])
    .map((s: any) => s?.name)
    .filter((n: string) => !SAFE_SYSCTLS.has(n));
  return bad.length ? { reason: "forbidden sysctls", detail: bad.join(", ") } : undefined;
};

// restricted

const allowPrivilegeEscalation: Check = (_m, _s, cs) => {
  const names = cs
    .filter(({ c }) => c.securityContext?.allowPrivilegeEscalation !== false)
    .map((x) => x.name);
  return names.length
    ? {
        reason: "allowPrivilegeEscalation != false",
        detail: `${ctrs(names)} must set securityContext.allowPrivilegeEscalation=false`,
      }
    : undefined;
};

const capabilitiesRestricted: Check = (_m, _s, cs) => {
  const noDrop: string[] = [];
  const adds: string[] = [];
  for (const { c, name } of cs) {
    const caps = c.securityContext?.capabilities;
    if (!(Array.isArray(caps?.drop) && caps.drop.includes("ALL"))) noDrop.push(name);
    const add = (Array.isArray(caps?.add) ? caps.add : []).filter((x: string) => x !== "NET_BIND_SERVICE");
    if (add.length)
      adds.push(`container "${name}" must not include ${quoteList(add)} in securityContext.capabilities.add`);
  }
  const detail = [
    ...(noDrop.length ? [`${ctrs(noDrop)} must set securityContext.capabilities.drop=["ALL"]`] : []),
    ...adds,
  ];
  return detail.length ? { reason: "unrestricted capabilities", detail: detail.join("; ") } : undefined;
};

const restrictedVolumes: Check = (_m, spec) => {
  const bad: { name: string; type: string }[] = [];
  for (const v of volumesOf(spec)) {
    const type = Object.keys(v).find((k) => k !== "name" && v[k] !== undefined && v[k] !== null);
    if (type && !RESTRICTED_VOLUMES.has(type)) bad.push({ name: v.name, type });
  }
  if (!bad.length) return undefined;
  const types = [...new Set(bad.map((b) => b.type))];
  const names = bad.map((b) => b.name);
  return {
    reason: "restricted volume types",
    detail: `${names.length === 1 ? "volume" : "volumes"} ${quoteList(names)} ${names.length === 1 ? "uses" : "use"} restricted volume ${types.length === 1 ? "type" : "types"} ${quoteList(types)}`,
  };
};

const runAsNonRoot: Check = (_m, spec, cs) => {
  const podSet = spec?.securityContext?.runAsNonRoot;
  const explicitFalse: string[] = [];
  const unset: string[] = [];
  const bad: string[] = [];
  if (podSet === false) bad.push("pod must not set securityContext.runAsNonRoot=false");
  for (const { c, name } of cs) {
    const v = c.securityContext?.runAsNonRoot;
    if (v === false) explicitFalse.push(name);
    else if (v !== true && podSet !== true) unset.push(name);
  }
  if (explicitFalse.length)
    bad.push(`${ctrs(explicitFalse)} must not set securityContext.runAsNonRoot=false`);
  if (unset.length && podSet !== false)
    bad.push(`pod or ${ctrs(unset)} must set securityContext.runAsNonRoot=true`);
  return bad.length ? { reason: "runAsNonRoot != true", detail: bad.join("; ") } : undefined;
};

const runAsUser: Check = (_m, spec, cs) => {
  const bad: string[] = [];
  if (spec?.securityContext?.runAsUser === 0) bad.push("pod must not set runAsUser=0");
  const names = cs.filter(({ c }) => c.securityContext?.runAsUser === 0).map((x) => x.name);
  if (names.length) bad.push(`${ctrs(names)} must not set runAsUser=0`);
  return bad.length ? { reason: "runAsUser=0", detail: bad.join("; ") } : undefined;
};

const seccompRestricted: Check = (_m, spec, cs) => {
  const ok = (t: unknown) => t === "RuntimeDefault" || t === "Localhost";
  const podType = spec?.securityContext?.seccompProfile?.type;
  const bad: string[] = [];
  if (podType !== undefined && !ok(podType))
    bad.push(`pod must not set securityContext.seccompProfile.type to ${JSON.stringify(podType)}`);
  const wrong = cs.filter(
    ({ c }) =>
      c.securityContext?.seccompProfile?.type !== undefined && !ok(c.securityContext.seccompProfile.type),
  );
  if (wrong.length)
    bad.push(
      `${ctrs(wrong.map((x) => x.name))} must not set securityContext.seccompProfile.type to ${JSON.stringify(wrong[0].c.securityContext.seccompProfile.type)}`,
    );
  if (!ok(podType)) {
    const unset = cs
      .filter(({ c }) => c.securityContext?.seccompProfile?.type === undefined)
      .map((x) => x.name);
    if (unset.length)
      bad.push(
        `pod or ${ctrs(unset)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`,
      );
  }
  return bad.length ? { reason: "seccompProfile", detail: bad.join("; ") } : undefined;
};

const BASELINE: Check[] = [
  appArmor,
  capabilitiesBaseline,
  hostNamespaces,
  hostPathVolumes,
  hostPorts,
  privileged,
  procMount,
  seLinux,
  seccompBaseline,
  sysctls,
];
/** restricted replaces the baseline checks it tightens (capabilities, hostPath, seccomp) */
const BASELINE_UNDER_RESTRICTED: Check[] = [
  appArmor,
  hostNamespaces,
  hostPorts,
  privileged,
  procMount,
  seLinux,
  sysctls,
];
const RESTRICTED: Check[] = [
  allowPrivilegeEscalation,
  capabilitiesRestricted,
  restrictedVolumes,
  runAsNonRoot,
  runAsUser,
  seccompRestricted,
];

/** The violations of a level by a pod (metadata + spec), in upstream's order. */
export function checkPod(level: Level, meta: any, spec: any): Violation[] {
  if (level === "privileged") return [];
  const cs = allContainers(spec);
  const checks = level === "baseline" ? BASELINE : [...BASELINE_UNDER_RESTRICTED, ...RESTRICTED];
  const out: Violation[] = [];
  for (const check of checks) {
    const v = check(meta, spec, cs);
    if (v) out.push(v);
  }
  return out;
}

/** `privileged (container "c" must not set ...), runAsNonRoot != true (...)` */
export const describeViolations = (vs: Violation[]) => vs.map((v) => `${v.reason} (${v.detail})`).join(", ");
