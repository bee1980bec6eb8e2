// Initializers (FLOW.md step 3), done as in-process mutating admission: logic that runs on a new
// object before any controller or scheduler can see it, so the object is stored already
// initialised (upstream replaced its InitializerConfiguration with mutating webhooks, which do
// the same synchronously).
//
// Configuration is an API object: the ConfigMap kube-system/edgeplane-initializers. Each data
// key is one initializer (applied in key order); its value is JSON, one rule or an array:
//
//   {
//     "name": "sidecar.example.com",              // optional, defaults to the data key
//     "match": {
//       "resources": ["pods"],                    // "<resource>" or "<resource>.<group>"
//       "operations": ["CREATE"],                 // optional, default CREATE only
//       "containerPort": 80                       // optional: pods (or pod templates) exposing it
//     },
//     "patchType": "strategic",                   // "strategic" (default) | "merge" | "json"
//     "patch": { "spec": { "containers": [ { "name": "proxy", "image": "envoy" } ] } }
//   }
//
// The seed's InitializerConfiguration maps onto this: each entry of `initializers` becomes a
// data key named after the initializer, its `rules` (apiGroups + resources) become
// match.resources ("pods" for group "", "deployments.apps" otherwise), and what the external
// initializer controller would have written is the patch. Applied initializers are listed in
// the annotation edgeplane.io/initializers; a rule that fails to parse or apply is skipped with a
// Warning. The result is defaulted and validated again before it is stored.
import { applyPatchByContentType } from "../../api/patch/index";
import type { KubeObject } from "../../api/types";
import { Store } from "../../durable-objects/store/client";
import { validateObject } from "../handlers/prepare";
import type { AdmissionAttributes, AdmissionPlugin } from "./index";
import { coreDef, isObj } from "./util";

export const CONFIG_NAMESPACE = "kube-system";
export const CONFIG_NAME = "edgeplane-initializers";
export const APPLIED_ANNOTATION = "edgeplane.io/initializers";

export interface InitializerRule {
  name: string;
  match: { resources: string[]; operations?: string[]; containerPort?: number };
  patchType?: "strategic" | "merge" | "json";
  patch: unknown;
}

const CONTENT_TYPES = {
  strategic: "application/strategic-merge-patch+json",
  merge: "application/merge-patch+json",
  json: "application/json-patch+json",
};

/** The rules a ConfigMap's data declares; unparsable entries come back as warnings. */
export function parseInitializers(data: Record<string, unknown> | undefined): {
  rules: InitializerRule[];
  warnings: string[];
} {
  const rules: InitializerRule[] = [];
  const warnings: string[] = [];
  for (const key of Object.keys(data ?? {}).sort()) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(String(data![key]));
    } catch {
      warnings.push(`initializer ${key}: not JSON; skipped`);
      continue;
    }
    for (const r of Array.isArray(parsed) ? parsed : [parsed]) {
      const res = r?.match?.resources;
      const type = r?.patchType ?? "strategic";
      if (!isObj(r) || !Array.isArray(res) || r.patch === undefined || !(type in CONTENT_TYPES)) {
        warnings.push(`initializer ${key}: needs match.resources, patch and a known patchType; skipped`);
        continue;
      }
      rules.push({
        ...(r as InitializerRule),
        name: typeof r.name === "string" ? r.name : key,
        patchType: type,
      });
    }
  }
  return { rules, warnings };
}

function podSpecOf(resource: string, obj: KubeObject): any {
  if (resource === "pods") return obj.spec;
  if (resource === "cronjobs") return obj.spec?.jobTemplate?.spec?.template?.spec;
  return obj.spec?.template?.spec;
}

export function ruleMatches(
  rule: InitializerRule,
  operation: string,
  qualified: string,
  obj: KubeObject,
): boolean {
  const ops = rule.match.operations ?? ["CREATE"];
  if (!ops.includes(operation) && !ops.includes("*")) return false;
  if (!rule.match.resources.includes(qualified) && !rule.match.resources.includes("*")) return false;
  const port = rule.match.containerPort;
  if (port === undefined) return true;
  const spec = podSpecOf(qualified.split(".")[0], obj);
  const containers = [
    ...(Array.isArray(spec?.containers) ? spec.containers : []),
    ...(Array.isArray(spec?.initContainers) ? spec.initContainers : []),
  ];
  return containers.some(
    (c: any) => Array.isArray(c?.ports) && c.ports.some((p: any) => p?.containerPort === port),
  );
}

/** Applies every matching rule to `obj` in place; returns the names of those applied. */
export function applyInitializers(
  rules: InitializerRule[],
  operation: string,
  qualified: string,
  kind: string,
  obj: KubeObject,
  warnings: string[],
): string[] {
  const applied: string[] = [];
  for (const rule of rules) {
    if (!ruleMatches(rule, operation, qualified, obj)) continue;
    try {
      const next = applyPatchByContentType(
        obj,
        rule.patch,
        CONTENT_TYPES[rule.patchType ?? "strategic"],
        kind,
      ) as KubeObject;
      for (const k of Object.keys(obj)) delete (obj as any)[k];
      Object.assign(obj, next);
      applied.push(rule.name);
    } catch (e) {
      warnings.push(`initializer ${rule.name}: ${e instanceof Error ? e.message : String(e)}; skipped`);
    }
  }
  if (applied.length) {
    const prior = obj.metadata.annotations?.[APPLIED_ANNOTATION];
    obj.metadata.annotations = {
      ...(obj.metadata.annotations ?? {}),
      [APPLIED_ANNOTATION]: [...(prior ? [prior] : []), ...applied].join(","),
    };
  }
  return applied;
}

/** The configuration, cached per isolate for a second; a write of it through here drops it. */
const CACHE_TTL_MS = 1000;
let cached: { at: number; cluster: string; data: Record<string, unknown> | undefined } | undefined;

async function configData(a: AdmissionAttributes): Promise<Record<string, unknown> | undefined> {
  const cluster = a.w.c.env.EDGEPLANE_CLUSTER;
  if (cached && cached.cluster === cluster && Date.now() - cached.at < CACHE_TTL_MS) return cached.data;
  const at = Date.now();
  const cm = await new Store(a.w.c.env, coreDef("configmaps")).find(CONFIG_NAMESPACE, CONFIG_NAME);
  const data = cm && isObj(cm.data) ? cm.data : undefined;
  cached = { at, cluster, data };
  return data;
}

const isConfig = (a: AdmissionAttributes) => {
  const o = a.object ?? a.old;
  return (
    a.w.def.group === "" &&
    a.w.def.resource === "configmaps" &&
    o?.metadata.namespace === CONFIG_NAMESPACE &&
    o?.metadata.name === CONFIG_NAME
  );
};

export const initializers: AdmissionPlugin = {
  name: "Initializers",
  async mutate(a) {
    if (isConfig(a)) {
      // the configuration itself is never initialised, and its next read must see this write
      cached = undefined;
      return;
    }
    if (!a.object || a.w.info.subresource || (a.operation !== "CREATE" && a.operation !== "UPDATE")) return;
    const data = await configData(a);
    if (!data) return;
    const def = a.w.def;
    const { rules, warnings } = parseInitializers(data);
    const qualified = def.group ? `${def.resource}.${def.group}` : def.resource;
    const applied = applyInitializers(rules, a.operation, qualified, def.kind, a.object, warnings);
    a.w.warnings.push(...warnings);
    if (!applied.length) return;
    // what the patches added gets its defaults and must be valid like anything else stored
    def.strategy.defaults?.(a.object);
    validateObject(def, a.object, a.old);
  },
  validate(a) {
    if (isConfig(a)) cached = undefined;
  },
};
