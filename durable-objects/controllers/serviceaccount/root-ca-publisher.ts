// The root CA publisher (upstream pkg/controller/certificates/rootcacertpublisher): every
// active namespace holds the ConfigMap kube-root-ca.crt whose ca.crt is the CA bundle clients
// verify the apiserver with. Pods read it through their projected service account volume, so
// a deleted map is made again and an edited one is put back.
import { lookupGVR } from "../../../api/registry";
import { ROOT_CA_CONFIGMAP } from "../../../api/strategies/config";
import type { KubeObject } from "../../../api/types";
import { isAlreadyExists, isConflict, isNamespaceTerminating, isNotFound } from "../lib/api-errors";
import { jsonEqual } from "../lib/json-equal";
import { isNamespaceActive } from "../lib/objects";
import type { Controller, ControllerContext } from "../runtime/controller";

const CM = lookupGVR("", "v1", "configmaps")!;
export const ROOT_CA_KEY = "ca.crt";
export const DESCRIPTION_ANNOTATION = "kubernetes.io/description";
/** Upstream's text, word for word: tools read it to tell what the map is for. */
export const ROOT_CA_DESCRIPTION =
  "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
  "No other usage is guaranteed across distributions of Kubernetes clusters.";

export async function syncRootCA(ns: string, rootCA: string, ctx: ControllerContext): Promise<void> {
  // a terminating namespace refuses new objects anyway; its map goes with everything else
  if (!isNamespaceActive(ctx.informers.get("/namespaces", ns))) return;
  const data = { [ROOT_CA_KEY]: rootCA };
  const cm = ctx.informers.get("/configmaps", `${ns}/${ROOT_CA_CONFIGMAP}`);
  if (!cm) {
    try {
      await ctx.api.create(CM, {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: {
          name: ROOT_CA_CONFIGMAP,
          namespace: ns,
          annotations: { [DESCRIPTION_ANNOTATION]: ROOT_CA_DESCRIPTION },
        },
        data,
      });
    } catch (e) {
      // made meanwhile (its event brings the key back), or the namespace went or is going
      if (isAlreadyExists(e) || isNotFound(e) || isNamespaceTerminating(e)) return;
      throw e;
    }
    return;
  }
  // as upstream: the data must be exactly the bundle and the description present (any text)
  if (jsonEqual(cm.data ?? {}, data) && cm.metadata.annotations?.[DESCRIPTION_ANNOTATION]) return;
  const next: KubeObject = structuredClone(cm);
  next.data = data;
  next.metadata.annotations = { ...next.metadata.annotations, [DESCRIPTION_ANNOTATION]: ROOT_CA_DESCRIPTION };
  try {
    await ctx.api.update(CM, next);
  } catch (e) {
    // changed or deleted since the cache saw it: that change's event queues the namespace again
    if (isConflict(e) || isNotFound(e)) return;
    throw e;
  }
}

/** The publisher for a configured root CA bundle (PEM); without one there is none, as before. */
export function createRootCAPublisher(rootCA: string): Controller {
  const ofMap = (cm: KubeObject) => (cm.metadata.name === ROOT_CA_CONFIGMAP ? [cm.metadata.namespace!] : []);
  return {
    name: "root-ca-cert-publisher",
    workers: 2,
    watches: {
      "/namespaces": (ns) => (isNamespaceActive(ns) ? [ns.metadata.name!] : []),
      "/configmaps": ofMap,
    },
    resync: (ctx) => ctx.informers.keys("/namespaces"),
    sync: (ns, ctx) => syncRootCA(ns, rootCA, ctx),
  };
}
