// ServiceAccount (upstream plugin/pkg/admission/serviceaccount): a pod runs as "default" unless it
// names another account, the account must exist, and each container gets the projected API
// credentials (token, cluster CA, namespace) unless automounting is turned off.
import { ROOT_CA_CONFIGMAP } from "../../api/strategies/config";
import type { KubeObject } from "../../api/types";
import { Store } from "../../durable-objects/store/client";
import type { AdmissionAttributes, AdmissionPlugin } from "./index";
import { admissionForbidden, cachedRead, coreDef, isCore, isObj, podContainers, sleep } from "./util";

export const DEFAULT_SA = "default";
export const TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount";
const VOLUME_PREFIX = "kube-api-access-";
const MIRROR_ANNOTATION = "kubernetes.io/config.mirror";
/** The service account controller creates "default" shortly after a namespace appears. */
const LOOKUP_WAIT_MS = 1500;

function randomSuffix(): string {
  const alphabet = "bcdfghjklmnpqrstvwxz2456789";
  const bytes = crypto.getRandomValues(new Uint8Array(5));
  return [...bytes].map((b) => alphabet[b % alphabet.length]).join("");
}

/**
 * Whether the root CA publisher runs: it does when the Worker knows the root CA
 * (EDGEPLANE_ROOT_CA), the controllers reading the same variable.
 */
export function rootCAPublished(env: { EDGEPLANE_ROOT_CA?: string }): boolean {
  return !!env.EDGEPLANE_ROOT_CA;
}

/** The projected volume upstream adds, already in its defaulted form. */
export function apiAccessVolume(name: string, rootCA: boolean): Record<string, unknown> {
  return {
    name,
    projected: {
      defaultMode: 420,
      sources: [
        { serviceAccountToken: { expirationSeconds: 3607, path: "token" } },
        {
          configMap: {
            name: ROOT_CA_CONFIGMAP,
            items: [{ key: "ca.crt", path: "ca.crt" }],
            // upstream leaves this unset: the publisher makes the map in every namespace and a
            // pod waits for it. With no root CA configured nothing publishes it, and a missing
            // map must not keep pods from starting
            ...(rootCA ? {} : { optional: true }),
          },
        },
        {
          downwardAPI: {
            items: [{ path: "namespace", fieldRef: { apiVersion: "v1", fieldPath: "metadata.namespace" } }],
          },
        },
      ],
    },
  };
}

/**
 * Mutation on pod create: default account name and the token volume with its mounts.
 * rootCA: whether kube-root-ca.crt is published (rootCAPublished).
 */
export function mutatePodForServiceAccount(
  pod: KubeObject,
  sa: KubeObject | undefined,
  rootCA: boolean,
): void {
  const spec = pod.spec ?? (pod.spec = {});
  if (!spec.serviceAccountName) spec.serviceAccountName = DEFAULT_SA;
  spec.serviceAccount = spec.serviceAccountName;
  const auto = spec.automountServiceAccountToken ?? sa?.automountServiceAccountToken ?? true;
  if (auto === false) return;
  const volumes: any[] = Array.isArray(spec.volumes) ? spec.volumes : (spec.volumes = []);
  // a pod that already mounts something at the token path keeps its own
  const containers = podContainers(spec, false);
  const needs = containers.filter(
    ({ c }) =>
      !(Array.isArray(c.volumeMounts) && c.volumeMounts.some((m: any) => m?.mountPath === TOKEN_MOUNT_PATH)),
  );
  if (!needs.length) return;
  let name = "";
  const existing = volumes.find((v) => typeof v?.name === "string" && v.name.startsWith(VOLUME_PREFIX));
  if (existing) name = existing.name;
  else {
    do name = VOLUME_PREFIX + randomSuffix();
    while (volumes.some((v) => v?.name === name));
    volumes.push(apiAccessVolume(name, rootCA));
  }
  for (const { c } of needs) {
    const mounts: any[] = Array.isArray(c.volumeMounts) ? c.volumeMounts : (c.volumeMounts = []);
    mounts.push({ name, readOnly: true, mountPath: TOKEN_MOUNT_PATH });
  }
}

async function findAccount(a: AdmissionAttributes, ns: string, name: string) {
  const store = new Store(a.w.c.env, coreDef("serviceaccounts"));
  const deadline = Date.now() + LOOKUP_WAIT_MS;
  for (;;) {
    const sa = await store.find(ns, name);
    if (sa || Date.now() >= deadline) return sa;
    await sleep(100);
  }
}

const skip = (pod: KubeObject | undefined) =>
  !pod || (isObj(pod.metadata.annotations) && MIRROR_ANNOTATION in pod.metadata.annotations);

/** Pods whose account was not there yet when mutating: looked up again (with a wait) in validate. */
const pending = new WeakSet<object>();

export const serviceAccount: AdmissionPlugin = {
  name: "ServiceAccount",
  async mutate(a) {
    if (a.operation !== "CREATE" || !isCore(a, "pods") || skip(a.object)) return;
    const pod = a.object!;
    const spec = pod.spec ?? (pod.spec = {});
    if (!spec.serviceAccountName) spec.serviceAccountName = DEFAULT_SA;
    spec.serviceAccount = spec.serviceAccountName;
    const saDef = coreDef("serviceaccounts");
    const ns = pod.metadata.namespace ?? "";
    const sa = await cachedRead(a.w.c.env, saDef, `${ns}/${spec.serviceAccountName}`, () =>
      new Store(a.w.c.env, saDef).find(ns, spec.serviceAccountName),
    );
    if (sa) mutatePodForServiceAccount(pod, sa, rootCAPublished(a.w.c.env));
    else pending.add(pod);
  },
  async validate(a) {
    // runs after NamespaceLifecycle: a pod in a missing namespace is refused there, without a wait
    if (a.operation !== "CREATE" || !isCore(a, "pods") || skip(a.object)) return;
    const pod = a.object!;
    if (!pending.has(pod)) return;
    const ns = pod.metadata.namespace ?? "";
    const name = pod.spec?.serviceAccountName || DEFAULT_SA;
    const sa = await findAccount(a, ns, name);
    if (!sa)
      throw admissionForbidden(
        a,
        `error looking up service account ${ns}/${name}: serviceaccount "${name}" not found`,
      );
    // the new account decides about automounting as it would have while mutating
    mutatePodForServiceAccount(pod, sa, rootCAPublished(a.w.c.env));
  },
};
