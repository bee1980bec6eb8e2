// Container environment: envFrom, env with value and valueFrom (configMap,
// secret, fieldRef, resourceFieldRef), and $(VAR) expansion, after the
// kubelet's makeEnvironmentVariables.
import { milliCPU, quantityOrNaN as parseQuantity, units } from "../../api/quantity";
import type {
  ConfigMap,
  Pod,
  PodContainer,
  ResourceFieldSelector,
  ResourceList,
  Secret,
} from "../lib/kube-types";

export interface EnvLookups {
  configMap(namespace: string, name: string): Promise<ConfigMap | undefined>;
  secret(namespace: string, name: string): Promise<Secret | undefined>;
}

export interface EnvContext {
  pod: Pod;
  container: PodContainer;
  podIP?: string;
  hostIP: string;
  nodeName: string;
  /** Node allocatable, for resourceFieldRef limits that are unset. */
  allocatable: { cpu: string; memory: string; "ephemeral-storage"?: string };
  /**
   * The Service environment variables (agent/network/service-env.ts): $(VAR) may refer to
   * them, and they follow the container's own variables unless one of those has the name.
   */
  serviceEnv?: { key: string; value: string }[];
}

/** A configuration error: the container cannot be created (CreateContainerConfigError). */
export class ConfigError extends Error {}

/** Expands $(VAR) from `vars`; $$ escapes; unknown references stay as written. */
export function expand(input: string, vars: Map<string, string>): string {
  let out = "";
  for (let i = 0; i < input.length; i++) {
    const ch = input[i];
    if (ch === "$" && input[i + 1] === "$") {
      out += "$";
      i++;
    } else if (ch === "$" && input[i + 1] === "(") {
      const end = input.indexOf(")", i + 2);
      if (end < 0) {
        out += input.slice(i);
        break;
      }
      const name = input.slice(i + 2, end);
      out += vars.has(name) ? vars.get(name) : `$(${name})`;
      i = end;
    } else out += ch;
  }
  return out;
}

export function fieldValue(path: string, ctx: EnvContext): string {
  const { pod } = ctx;
  const m = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(path);
  if (m)
    return (m[1] === "labels" ? pod.metadata?.labels : pod.metadata?.annotations)?.[m[2] as string] ?? "";
  switch (path) {
    case "metadata.name":
      return pod.metadata?.name ?? "";
    case "metadata.namespace":
      return pod.metadata?.namespace ?? "";
    case "metadata.uid":
      return pod.metadata?.uid ?? "";
    case "metadata.labels":
      return formatMap(pod.metadata?.labels);
    case "metadata.annotations":
      return formatMap(pod.metadata?.annotations);
    case "spec.nodeName":
      return pod.spec?.nodeName ?? ctx.nodeName;
    case "spec.serviceAccountName":
      return pod.spec?.serviceAccountName ?? "";
    case "status.hostIP":
      return ctx.hostIP;
    case "status.hostIPs":
      return ctx.hostIP;
    case "status.podIP":
      return ctx.podIP ?? "";
    case "status.podIPs":
      return ctx.podIP ?? "";
    default:
      throw new ConfigError(`unsupported fieldRef fieldPath ${path}`);
  }
}

/** `key="value"` lines sorted by key, the downward API format of label and annotation maps. */
export function formatMap(m: Record<string, string> | undefined): string {
  return Object.keys(m ?? {})
    .sort()
    .map((k) => `${k}=${JSON.stringify(m?.[k])}`)
    .join("\n");
}

/** resourceFieldRef: limits fall back to node allocatable; divided by the divisor and rounded up. */
export function resourceValue(
  ref: ResourceFieldSelector,
  containers: PodContainer[],
  ctx: EnvContext,
): string {
  const c = containers.find((x) => x.name === (ref.containerName || ctx.container?.name)) ?? ctx.container;
  const [kind, res] = String(ref.resource).split(".") as [string, string];
  const lists: Record<string, ResourceList | undefined> = {
    requests: c.resources?.requests,
    limits: c.resources?.limits,
  };
  let raw = lists[kind]?.[res];
  if (raw === undefined && kind === "requests") raw = c.resources?.limits?.[res];
  if (raw === undefined && kind === "limits")
    raw = (ctx.allocatable as Record<string, string | undefined>)[res];
  if (raw === undefined) raw = "0";
  if (res === "cpu") {
    const divisor = ref.divisor ? milliCPU(ref.divisor) : 1000;
    return String(Math.ceil(milliCPU(raw) / Math.max(1, divisor)));
  }
  const divisor = ref.divisor ? parseQuantity(ref.divisor) : 1;
  return String(Math.ceil(units(raw) / (divisor || 1)));
}

function decode(secret: Secret, key: string): string | undefined {
  const v = secret.data?.[key];
  if (v !== undefined) return Buffer.from(v, "base64").toString("utf8");
  return secret.stringData?.[key];
}

/** The ordered environment of a container (later entries win, as in upstream). */
export async function resolveEnv(
  ctx: EnvContext,
  lookups: EnvLookups,
): Promise<{ key: string; value: string }[]> {
  const ns = ctx.pod.metadata?.namespace ?? "default";
  const vars = new Map<string, string>();
  const cms = new Map<string, ConfigMap | undefined>();
  const secrets = new Map<string, Secret | undefined>();
  // a reference without a name (validation refuses one) finds nothing
  const getCM = async (name = "") => {
    if (name && !cms.has(name)) cms.set(name, await lookups.configMap(ns, name));
    return cms.get(name);
  };
  const getSecret = async (name = "") => {
    if (name && !secrets.has(name)) secrets.set(name, await lookups.secret(ns, name));
    return secrets.get(name);
  };
  for (const from of ctx.container.envFrom ?? []) {
    const prefix = from.prefix ?? "";
    if (from.configMapRef) {
      const cm = await getCM(from.configMapRef.name);
      if (!cm) {
        if (from.configMapRef.optional) continue;
        throw new ConfigError(`configmap "${from.configMapRef.name}" not found`);
      }
      for (const [k, v] of Object.entries(cm.data ?? {})) vars.set(prefix + k, String(v));
    } else if (from.secretRef) {
      const s = await getSecret(from.secretRef.name);
      if (!s) {
        if (from.secretRef.optional) continue;
        throw new ConfigError(`secret "${from.secretRef.name}" not found`);
      }
      for (const k of Object.keys(s.data ?? {})) vars.set(prefix + k, decode(s, k) ?? "");
    }
  }
  const containers = [...(ctx.pod.spec?.initContainers ?? []), ...(ctx.pod.spec?.containers ?? [])];
  const serviceVars = new Map((ctx.serviceEnv ?? []).map((e) => [e.key, e.value]));
  for (const e of ctx.container.env ?? []) {
    if (e.valueFrom === undefined) {
      // as the kubelet's expansion: the container's variables so far, then the Services'
      vars.set(e.name, expand(e.value ?? "", serviceVars.size ? new Map([...serviceVars, ...vars]) : vars));
      continue;
    }
    const vf = e.valueFrom;
    if (vf.fieldRef) vars.set(e.name, fieldValue(vf.fieldRef.fieldPath, ctx));
    else if (vf.resourceFieldRef) vars.set(e.name, resourceValue(vf.resourceFieldRef, containers, ctx));
    else if (vf.configMapKeyRef) {
      const ref = vf.configMapKeyRef;
      const cm = await getCM(ref.name);
      const v = cm?.data?.[ref.key];
      if (v === undefined) {
        if (ref.optional) continue;
        throw new ConfigError(
          cm
            ? `couldn't find key ${ref.key} in ConfigMap ${ns}/${ref.name}`
            : `configmap "${ref.name}" not found`,
        );
      }
      vars.set(e.name, String(v));
    } else if (vf.secretKeyRef) {
      const ref = vf.secretKeyRef;
      const s = await getSecret(ref.name);
      const v = s ? decode(s, ref.key) : undefined;
      if (v === undefined) {
        if (ref.optional) continue;
        throw new ConfigError(
          s ? `couldn't find key ${ref.key} in Secret ${ns}/${ref.name}` : `secret "${ref.name}" not found`,
        );
      }
      vars.set(e.name, v);
    }
  }
  const out = [...vars].map(([key, value]) => ({ key, value }));
  for (const [key, value] of serviceVars) if (!vars.has(key)) out.push({ key, value });
  return out;
}

/** Command and args with $(VAR) expanded from the container's environment. */
export function expandCommand(
  list: string[] | undefined,
  env: { key: string; value: string }[],
): string[] | undefined {
  if (!list) return undefined;
  const vars = new Map(env.map((e) => [e.key, e.value]));
  return list.map((s) => expand(s, vars));
}
