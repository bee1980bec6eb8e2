// Pod volumes, written under <root>/pods/<uid>/volumes/<plugin>/<name> and
// bind-mounted into containers: emptyDir, configMap, secret, downwardAPI,
// projected (incl. serviceAccountToken), hostPath, and claims bound to hostPath or local
// PersistentVolumes.
import { chmodSync, existsSync, mkdirSync, statSync } from "node:fs";
import { join, normalize } from "node:path";
import type { IPersistentVolume } from "kubernetes-models/v1/PersistentVolume";
import type { IPersistentVolumeClaim } from "kubernetes-models/v1/PersistentVolumeClaim";
import type { Mount } from "../cri/types";
import type {
  ConfigMap,
  DownwardAPIVolumeSource,
  KeyToPath,
  Pod,
  PodContainer,
  Secret,
  ServiceAccountTokenProjection,
} from "../lib/kube-types";
import { type Api, enc } from "./api";
import { type FileProjection, writeAtomic } from "./atomic-writer";
import { type EnvContext, expand, fieldValue, resourceValue } from "./env";

export class VolumeError extends Error {}

const PLUGIN: Record<string, string> = {
  emptyDir: "kubernetes.io~empty-dir",
  configMap: "kubernetes.io~configmap",
  secret: "kubernetes.io~secret",
  downwardAPI: "kubernetes.io~downward-api",
  projected: "kubernetes.io~projected",
};

export interface VolumeContext {
  api: Api;
  pod: Pod;
  podDir: string;
  env: Omit<EnvContext, "container">;
}

function fileMap(): Map<string, FileProjection> {
  return new Map();
}

/** A file source of a configMap or secret volume (or projection): what to project, and how. */
interface FileSource {
  optional?: boolean;
  items?: KeyToPath[];
  defaultMode?: number;
}

/** GET of one object of a kind: the apiserver answers 200 with that object. */
async function getObject<T>(api: Api, path: string): Promise<T | undefined> {
  const r = await api.get(path);
  if (r.status === 200) return r.json as T | undefined;
  if (r.status === 404) return undefined;
  throw new VolumeError(`GET ${path}: ${r.status} ${r.json?.message ?? ""}`);
}

function project(
  out: Map<string, FileProjection>,
  data: Record<string, Buffer>,
  items: KeyToPath[] | undefined,
  mode: number,
  what: string,
  optional: boolean,
): void {
  if (items?.length) {
    for (const it of items) {
      const v = data[it.key];
      if (v === undefined) {
        if (optional) continue;
        throw new VolumeError(`configuration of ${what}: key "${it.key}" not found`);
      }
      out.set(it.path, { data: v, mode: it.mode ?? mode });
    }
  } else for (const [k, v] of Object.entries(data)) out.set(k, { data: v, mode });
}

function cmData(cm: ConfigMap): Record<string, Buffer> {
  const out: Record<string, Buffer> = {};
  for (const [k, v] of Object.entries(cm.data ?? {})) out[k] = Buffer.from(String(v));
  for (const [k, v] of Object.entries(cm.binaryData ?? {})) out[k] = Buffer.from(String(v), "base64");
  return out;
}

function secretData(s: Secret): Record<string, Buffer> {
  const out: Record<string, Buffer> = {};
  for (const [k, v] of Object.entries(s.data ?? {})) out[k] = Buffer.from(String(v), "base64");
  return out;
}

async function configMapFiles(
  ctx: VolumeContext,
  src: FileSource & { name?: string },
  out: Map<string, FileProjection>,
  mode: number,
): Promise<void> {
  const ns = ctx.pod.metadata.namespace;
  const cm = await getObject<ConfigMap>(
    ctx.api,
    `/api/v1/namespaces/${enc(ns)}/configmaps/${enc(String(src.name))}`,
  );
  if (!cm) {
    if (src.optional) return;
    throw new VolumeError(`configmap "${src.name}" not found`);
  }
  project(out, cmData(cm), src.items, src.defaultMode ?? mode, `configmap ${src.name}`, !!src.optional);
}

async function secretFiles(
  ctx: VolumeContext,
  src: FileSource,
  name: string,
  out: Map<string, FileProjection>,
  mode: number,
): Promise<void> {
  const ns = ctx.pod.metadata.namespace;
  const s = await getObject<Secret>(ctx.api, `/api/v1/namespaces/${enc(ns)}/secrets/${enc(name)}`);
  if (!s) {
    if (src.optional) return;
    throw new VolumeError(`secret "${name}" not found`);
  }
  project(out, secretData(s), src.items, src.defaultMode ?? mode, `secret ${name}`, !!src.optional);
}

function downwardFiles(
  ctx: VolumeContext,
  src: DownwardAPIVolumeSource,
  out: Map<string, FileProjection>,
  mode: number,
): void {
  const containers: PodContainer[] = [
    ...(ctx.pod.spec?.initContainers ?? []),
    ...(ctx.pod.spec?.containers ?? []),
  ];
  for (const it of src.items ?? []) {
    let v: string;
    const ectx = { ...ctx.env, container: containers[0] ?? { name: "" } };
    if (it.fieldRef) v = fieldValue(it.fieldRef.fieldPath, ectx);
    else if (it.resourceFieldRef) v = resourceValue(it.resourceFieldRef, containers, ectx);
    else continue;
    out.set(it.path, { data: Buffer.from(v), mode: it.mode ?? src.defaultMode ?? mode });
  }
}

async function tokenFile(
  ctx: VolumeContext,
  src: ServiceAccountTokenProjection,
  out: Map<string, FileProjection>,
  mode: number,
  log: (m: string) => void,
): Promise<void> {
  const pod = ctx.pod;
  const sa = pod.spec?.serviceAccountName || "default";
  const body = {
    apiVersion: "authentication.k8s.io/v1",
    kind: "TokenRequest",
    spec: {
      audiences: src.audience ? [src.audience] : [],
      expirationSeconds: src.expirationSeconds ?? 3607,
      boundObjectRef: { apiVersion: "v1", kind: "Pod", name: pod.metadata.name, uid: pod.metadata.uid },
    },
  };
  const r = await ctx.api.request(
    "POST",
    `/api/v1/namespaces/${enc(pod.metadata.namespace)}/serviceaccounts/${enc(sa)}/token`,
    body,
  );
  const status = r.json?.status as { token?: unknown } | undefined;
  const token = status?.token;
  if ((r.status === 201 || r.status === 200) && typeof token === "string") {
    out.set(src.path, { data: Buffer.from(token), mode });
    return;
  }
  // The control plane may not serve TokenRequest yet: the pod still starts, without a token.
  log(
    `serviceAccountToken for ${pod.metadata.namespace}/${pod.metadata.name}: ${r.status} ${r.json?.message ?? ""}; writing an empty token`,
  );
  out.set(src.path, { data: Buffer.alloc(0), mode });
}

/** A hostPath volume's directory, made when its type says DirectoryOrCreate. */
function hostDirectory(p: string, type: string | undefined): string {
  if (type === "DirectoryOrCreate" && !existsSync(p)) mkdirSync(p, { recursive: true, mode: 0o755 });
  else if (type === "Directory" && (!existsSync(p) || !statSync(p).isDirectory()))
    throw new VolumeError(`hostPath type check failed: ${p} is not a directory`);
  return p;
}

/**
 * The directory of the volume a claim is bound to: the claim must be Bound, and its
 * PersistentVolume a hostPath or local one (what this node can mount without a CSI driver).
 */
async function claimDirectory(ctx: VolumeContext, claimName: string, owner?: string): Promise<string> {
  const ns = ctx.pod.metadata.namespace;
  const claim = await getObject<IPersistentVolumeClaim>(
    ctx.api,
    `/api/v1/namespaces/${enc(ns)}/persistentvolumeclaims/${enc(claimName)}`,
  );
  if (!claim) throw new VolumeError(`persistentvolumeclaim "${claimName}" not found`);
  if (owner && !claim.metadata?.ownerReferences?.some((r) => r.controller && r.uid === owner))
    throw new VolumeError(
      `PVC ${ns}/${claimName} was not created for pod ${ns}/${ctx.pod.metadata.name} (pod is not owner)`,
    );
  const volumeName = claim.spec?.volumeName;
  if (claim.status?.phase !== "Bound" || !volumeName)
    throw new VolumeError(
      `PVC ${ns}/${claimName} has non-bound phase ("${claim.status?.phase ?? ""}") or empty pvc.Spec.VolumeName ("${volumeName ?? ""}")`,
    );
  const pv = await getObject<IPersistentVolume>(ctx.api, `/api/v1/persistentvolumes/${enc(volumeName)}`);
  if (!pv) throw new VolumeError(`persistentvolume "${volumeName}" not found`);
  if (pv.spec?.hostPath) return hostDirectory(pv.spec.hostPath.path, pv.spec.hostPath.type);
  if (pv.spec?.local) return hostDirectory(pv.spec.local.path, "Directory");
  throw new VolumeError(
    `persistentvolume "${volumeName}": only hostPath and local volumes can be mounted on this node`,
  );
}

/** Sets up every volume of the pod; returns each volume's host directory by name. */
export async function setupVolumes(
  ctx: VolumeContext,
  log: (m: string) => void = () => {},
): Promise<Map<string, string>> {
  const paths = new Map<string, string>();
  for (const v of ctx.pod.spec?.volumes ?? []) {
    const kind = Object.keys(PLUGIN).find((k) => v[k as keyof typeof v] !== undefined);
    if (v.hostPath) {
      paths.set(v.name, hostDirectory(v.hostPath.path, v.hostPath.type));
      continue;
    }
    if (v.persistentVolumeClaim) {
      paths.set(v.name, await claimDirectory(ctx, v.persistentVolumeClaim.claimName));
      continue;
    }
    if (v.ephemeral) {
      // a generic ephemeral volume: the claim <pod>-<volume> the pod owns
      paths.set(
        v.name,
        await claimDirectory(ctx, `${ctx.pod.metadata.name}-${v.name}`, ctx.pod.metadata.uid),
      );
      continue;
    }
    if (!kind) throw new VolumeError(`volume "${v.name}": unsupported volume type`);
    const dir = join(ctx.podDir, "volumes", PLUGIN[kind] as string, v.name);
    paths.set(v.name, dir);
    if (kind === "emptyDir") {
      if (!existsSync(dir)) {
        mkdirSync(dir, { recursive: true });
        chmodSync(dir, 0o777);
      }
      continue;
    }
    const files = fileMap();
    if (kind === "configMap" && v.configMap) await configMapFiles(ctx, v.configMap, files, 0o644);
    else if (kind === "secret" && v.secret)
      await secretFiles(ctx, v.secret, String(v.secret.secretName), files, 0o644);
    else if (kind === "downwardAPI" && v.downwardAPI) downwardFiles(ctx, v.downwardAPI, files, 0o644);
    else if (kind === "projected" && v.projected) {
      const mode = v.projected.defaultMode ?? 0o644;
      for (const s of v.projected.sources ?? []) {
        if (s.configMap) await configMapFiles(ctx, { ...s.configMap, defaultMode: mode }, files, mode);
        else if (s.secret)
          await secretFiles(ctx, { ...s.secret, defaultMode: mode }, String(s.secret.name), files, mode);
        else if (s.downwardAPI) downwardFiles(ctx, { ...s.downwardAPI, defaultMode: mode }, files, mode);
        else if (s.serviceAccountToken)
          await tokenFile(ctx, s.serviceAccountToken, files, mode === 0o644 ? 0o600 : mode, log);
      }
    }
    writeAtomic(dir, files);
  }
  return paths;
}

/** Volumes the kubelet always mounts read-only: the API-projected kinds. */
export function readOnlyVolumes(pod: Pod): Set<string> {
  const out = new Set<string>();
  for (const v of pod.spec?.volumes ?? [])
    if (v.configMap || v.secret || v.downwardAPI || v.projected || v.persistentVolumeClaim?.readOnly)
      out.add(v.name);
  return out;
}

/** CRI mounts of one container; subPath and subPathExpr resolved under the volume's directory. */
export function containerMounts(
  container: PodContainer,
  volumes: Map<string, string>,
  env: { key: string; value: string }[],
  readOnly: Set<string> = new Set(),
): Mount[] {
  const vars = new Map(env.map((e) => [e.key, e.value]));
  const out: Mount[] = [];
  for (const m of container.volumeMounts ?? []) {
    const base = volumes.get(m.name);
    if (!base) throw new VolumeError(`volume "${m.name}" not found for mount ${m.mountPath}`);
    const sub = m.subPathExpr ? expand(m.subPathExpr, vars) : m.subPath;
    let host = base;
    if (sub) {
      const n = normalize(sub);
      if (n.startsWith("/") || n.split("/").includes("..")) throw new VolumeError(`invalid subPath ${sub}`);
      host = join(base, n);
      if (!existsSync(host)) {
        mkdirSync(host, { recursive: true });
        chmodSync(host, 0o777);
      }
    }
    out.push({
      container_path: m.mountPath,
      host_path: host,
      readonly: !!m.readOnly || readOnly.has(m.name),
      propagation:
        m.mountPropagation === "Bidirectional"
          ? "PROPAGATION_BIDIRECTIONAL"
          : m.mountPropagation === "HostToContainer"
            ? "PROPAGATION_HOST_TO_CONTAINER"
            : "PROPAGATION_PRIVATE",
    });
  }
  return out;
}
