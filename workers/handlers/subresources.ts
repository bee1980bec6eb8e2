// Subresources with a kind of their own: scale (autoscaling/v1 Scale over spec.replicas)
// and the others a pod or an object has (binding.ts, eviction.ts, streams.ts, tokens).

import { customScaleOf, setAtPath } from "../../api/custom/definition";
import { badRequest, field, invalid, notFoundPath, staleResourceVersion } from "../../api/errors";
import { CLUSTERS_GROUP } from "../../api/strategies/clusters";
import { isObject } from "../../api/strategies/common";
import { scaleColumns, scaleOf, validateScale } from "../../api/strategies/workloads";
import { TABLE_TYPE, tableOfKind } from "../../api/table";
import type { KubeObject } from "../../api/types";
import { admit, admitMutating, admitValidating } from "../admission";
import { tokenRequest } from "../authn/index";
import { clusterCertificate, clusterToken } from "../clusters/handlers";
import { negotiate } from "../encoding/negotiate";
import {
  type Decoded,
  decodeBody,
  decodeObject,
  decodePatch,
  mediaType,
  readText,
} from "../encoding/request-body";
import { encoded, json } from "../encoding/respond";
import { podBinding } from "./binding";
import { eviction } from "./eviction";
import { checkFields, objectFound, patchFound } from "./field-validation";
import { applyPatchBody } from "./patching";
import { checkTypeMeta, isConflict } from "./prepare";
import { streamSubresource } from "./streams";
import { respondWith, type WriteContext } from "./write-context";

const CUSTOM_SCALE_PATCHES = ["application/json-patch+json", "application/merge-patch+json"];
const SCALE_PATCHES = [...CUSTOM_SCALE_PATCHES, "application/strategic-merge-patch+json"];

/** The object's Scale: spec.replicas for the built-in kinds, the CRD's paths for a custom one. */
function scaleFor(w: WriteContext, obj: KubeObject): KubeObject {
  const paths = w.def.custom?.scale;
  return paths ? customScaleOf(obj, paths) : scaleOf(obj);
}

async function scale(w: WriteContext, namespace: string): Promise<Response> {
  const accept = w.c.req.header("accept") ?? null;
  if (w.info.verb === "get") {
    const current = scaleFor(w, await w.store.get(namespace, w.info.name));
    // kubectl get --subresource=scale asks for a Table: upstream's Scale columns
    const out = negotiate(accept, w.c.get("url").searchParams.get("includeObject"));
    if (out.kind === "table")
      return json(tableOfKind(scaleColumns, current, out.include), 200, { "content-type": TABLE_TYPE });
    return encoded(JSON.stringify(current), 200, accept);
  }
  let decoded: Decoded;
  let type = "";
  if (w.info.verb === "patch") {
    type = mediaType(w.c.req.header("content-type") ?? null);
    decoded = decodePatch(
      await readText(w.c.req.raw),
      type,
      // a custom resource's Scale takes no strategic merge patch, as its object does not
      w.def.custom ? CUSTOM_SCALE_PATCHES : SCALE_PATCHES,
      w.fieldValidation,
    );
  } else {
    decoded = await decodeBody(w.c.req.raw, "Scale");
    const v = decoded.value;
    if (isObject(v)) {
      v.apiVersion ??= "autoscaling/v1";
      v.kind ??= "Scale";
      checkFields(asScale(w), v as KubeObject, objectFound(decoded, v as KubeObject, "Scale"));
    }
  }
  const body = decoded.value;
  const found = w.info.verb === "patch" ? patchFound(decoded, type) : undefined;
  for (let attempt = 0; ; attempt++) {
    const old = await w.store.get(namespace, w.info.name);
    const current = scaleFor(w, old);
    let wanted: KubeObject;
    if (w.info.verb === "patch") {
      wanted = applyPatchBodyForScale(w, current as unknown as KubeObject, body, type);
      checkFields(asScale(w), wanted, found);
    } else {
      if (!isObject(body)) throw badRequest("the body of the request must be a Scale object");
      wanted = body as KubeObject;
      if (wanted.kind && wanted.kind !== "Scale")
        throw badRequest(`the kind in the data (${wanted.kind}) does not match the expected kind (Scale)`);
      const rv = wanted.metadata?.resourceVersion;
      if (rv && rv !== old.metadata.resourceVersion) throw staleResourceVersion(w.def, w.info.name);
    }
    // an UPDATE of <resource>/scale, kind autoscaling/v1 Scale, old and new, admitted as
    // upstream's ScaleREST does: mutated, validated, then the validating plugins
    wanted = asScaleObject(wanted, current);
    await admitMutating(w, "UPDATE", wanted, current);
    const replicas = wanted.spec?.replicas;
    const causes =
      typeof replicas === "number" && Number.isInteger(replicas)
        ? validateScale(wanted)
        : [field.invalid("spec.replicas", replicas, "must be an integer")];
    if (causes.length) throw invalid({ group: "autoscaling", kind: "Scale" }, w.info.name, causes);
    await admitValidating(w, "UPDATE", wanted, current);
    const next = structuredClone(old);
    const paths = w.def.custom?.scale;
    if (paths) setAtPath(next, paths.specReplicasPath, replicas);
    else next.spec = { ...next.spec, replicas };
    if (scaleFor(w, next).spec.replicas !== current.spec.replicas)
      next.metadata.generation = (old.metadata.generation ?? 0) + 1;
    try {
      const text = await w.store.update(next, { expectRV: old.metadata.resourceVersion, dryRun: w.dryRun });
      return respondWith(w, JSON.stringify(scaleFor(w, JSON.parse(text))), 200);
    } catch (e) {
      if (isConflict(e) && w.info.verb === "patch" && attempt < 8) continue;
      throw e;
    }
  }
}

/** A Scale as admission sees it: the posted or patched one, with the current one's metadata filling what it lacks. */
function asScaleObject(wanted: KubeObject, current: KubeObject): KubeObject {
  const meta = isObject(wanted.metadata) ? wanted.metadata : {};
  return {
    ...wanted,
    apiVersion: "autoscaling/v1",
    kind: "Scale",
    metadata: { ...current.metadata, ...meta },
  } as KubeObject;
}

/** The write seen as one of a Scale: its fields are the Scale's (not the parent's schema). */
function asScale(w: WriteContext): WriteContext {
  return { ...w, def: { ...w.def, kind: "Scale", group: "autoscaling", version: "v1", strategy: {} } };
}

function applyPatchBodyForScale(
  w: WriteContext,
  current: KubeObject,
  body: unknown,
  type: string,
): KubeObject {
  // the patch engines work on the Scale document; checkTypeMeta would expect the parent kind
  return applyPatchBody(asScale(w), current, body, type, false);
}

/** namespaces/<name>/finalize: only spec.finalizers changes; with none left a terminating namespace goes. */
async function finalize(w: WriteContext): Promise<Response> {
  const body = checkTypeMeta(w.def, await decodeObject(w.c.req.raw));
  for (let attempt = 0; ; attempt++) {
    const ns = await w.store.get("", w.info.name);
    if (body.metadata.resourceVersion && body.metadata.resourceVersion !== ns.metadata.resourceVersion)
      throw staleResourceVersion(w.def, w.info.name);
    const finalizers = body.spec?.finalizers;
    if (finalizers !== undefined && !Array.isArray(finalizers))
      throw invalid({ group: "", kind: "Namespace" }, w.info.name, [
        field.invalid("spec.finalizers", finalizers, "must be a list"),
      ]);
    const old = structuredClone(ns);
    ns.spec = { ...ns.spec, finalizers: finalizers ?? [] };
    // an UPDATE of namespaces/finalize, kind Namespace, old and new
    await admit(w, "UPDATE", ns, old);
    try {
      const text = await w.store.update(ns, { expectRV: old.metadata.resourceVersion, dryRun: w.dryRun });
      return encoded(text, 200, w.c.req.header("accept") ?? null);
    } catch (e) {
      if (isConflict(e) && !body.metadata.resourceVersion && attempt < 8) continue;
      throw e;
    }
  }
}

/**
 * serviceaccounts/<name>/token: a CREATE of an authentication.k8s.io/v1 TokenRequest, admitted
 * as upstream's TokenREST does: mutated as posted, validated once defaulted and checked.
 */
async function serviceAccountToken(w: WriteContext, namespace: string): Promise<Response> {
  const body = await decodeObject(w.c.req.raw);
  const posted = (isObject(body) ? body : {}) as KubeObject;
  posted.apiVersion ??= "authentication.k8s.io/v1";
  posted.kind ??= "TokenRequest";
  if (!isObject(posted.metadata)) posted.metadata = {};
  posted.metadata.namespace ||= namespace;
  await admitMutating(w, "CREATE", posted, undefined);
  const tr = await tokenRequest(w.c.env, { namespace, name: w.info.name }, posted, {
    warn: (m) => w.warnings.push(m),
    admit: (req) => admitValidating(w, "CREATE", req, undefined),
  });
  return encoded(JSON.stringify(tr), 201, w.c.req.header("accept") ?? null);
}

export async function subresourceHandler(w: WriteContext, namespace: string): Promise<Response> {
  switch (w.info.subresource) {
    case "finalize":
      if (w.def.kind === "Namespace") return finalize(w);
      break;
    case "scale":
      return scale(w, namespace);
    case "eviction":
      if (w.def.kind === "Pod") return eviction(w, namespace);
      break;
    case "log":
    case "exec":
    case "attach":
    case "portforward":
      if (w.def.kind === "Pod") return streamSubresource(w, namespace);
      break;
    case "token":
      if (w.def.kind === "ServiceAccount" && w.info.verb === "create")
        return serviceAccountToken(w, namespace);
      if (w.def.kind === "Cluster" && w.def.group === CLUSTERS_GROUP && w.info.verb === "create")
        return clusterToken(w);
      break;
    case "certificate":
      if (w.def.kind === "Cluster" && w.def.group === CLUSTERS_GROUP && w.info.verb === "create")
        return clusterCertificate(w);
      break;
    case "binding":
      if (w.def.kind === "Pod") return podBinding(w, namespace);
      break;
  }
  throw notFoundPath();
}
