// Local APIServices (upstream's autoregister and CRD registration controllers): every
// group/version this server serves in process gets an APIService "<version>.<group>" with no
// service, labelled kube-aggregator.kubernetes.io/automanaged; one whose group/version is no
// longer served (a CRD deleted) is removed. The list is read where the server lists its groups:
// its own discovery (/api and /apis), so built-in kinds, CRD groups and any group served
// in process later appear without a list kept here. Group/versions an APIService hands to a
// Service are the user's and left alone. One key ("local"), level-triggered.
import { lookupGVR } from "../../../api/registry";
import { type APIService, AUTOMANAGED_LABEL, apiServiceName } from "../../../api/strategies/apiservices";
import type { KubeObject } from "../../../api/types";
import { CRDS } from "../crd/custom-kinds";
import { isAlreadyExists, isNotFound } from "../lib/api-errors";
import type { Controller, ControllerContext } from "../runtime/controller";
import { APISERVICES } from "./availability";

const APISERVICE = lookupGVR("apiregistration.k8s.io", "v1", "apiservices")!;
const KEY = "local";

/** Upstream's group priorities for the built-in groups (kube-aggregator's table). */
const GROUP_PRIORITY: Record<string, number> = {
  "": 18000,
  "apiregistration.k8s.io": 18000,
  apps: 17800,
  "events.k8s.io": 17750,
  "authentication.k8s.io": 17700,
  "authorization.k8s.io": 17600,
  autoscaling: 17500,
  batch: 17400,
  "certificates.k8s.io": 17300,
  "networking.k8s.io": 17200,
  policy: 17100,
  "rbac.authorization.k8s.io": 17000,
  "storage.k8s.io": 16800,
  "apiextensions.k8s.io": 16700,
  "admissionregistration.k8s.io": 16700,
  "scheduling.k8s.io": 16600,
  "coordination.k8s.io": 16500,
  "node.k8s.io": 16300,
  "discovery.k8s.io": 16200,
  "flowcontrol.apiserver.k8s.io": 16100,
};
/** a custom resource's group, and a group the table does not name (upstream: CRDs get 1000) */
const CUSTOM_GROUP_PRIORITY = 1000;
const OTHER_GROUP_PRIORITY = 16000;

/** Upstream's version priorities: GA 15, beta 9, alpha 1 (the core group's v1: 1). */
function versionPriority(group: string, version: string): number {
  if (group === "") return 1;
  if (/alpha/.test(version)) return 1;
  if (/beta/.test(version)) return 9;
  return 15;
}

interface GroupList {
  groups?: { name: string; versions?: { version: string }[] }[];
}

/** What the server lists now: "<group>/<version>" pairs ("" for the core group). */
async function servedGroupVersions(ctx: ControllerContext): Promise<{ group: string; version: string }[]> {
  const headers = { accept: "application/json" };
  const core = (await ctx.api.request("GET", "/api", undefined, undefined, headers)) as {
    versions?: string[];
  };
  const named = (await ctx.api.request("GET", "/apis", undefined, undefined, headers)) as GroupList;
  return [
    ...(core.versions ?? []).map((version) => ({ group: "", version })),
    ...(named.groups ?? []).flatMap((g) =>
      (g.versions ?? []).map((v) => ({ group: g.name, version: v.version })),
    ),
  ];
}

async function sync(_key: string, ctx: ControllerContext): Promise<void> {
  const existing = ctx.informers.list(APISERVICES) as APIService[];
  // a group/version an APIService sends to a Service is not served here (discovery lists it
  // when available): never made local
  const remote = new Set(existing.filter((s) => s.spec?.service).map((s) => s.metadata.name!));
  const customGroups = new Set(
    ctx.informers.list(CRDS).map((c: KubeObject) => String((c as { spec?: { group?: string } }).spec?.group)),
  );
  const want = new Map<string, APIService>();
  for (const { group, version } of await servedGroupVersions(ctx)) {
    const name = apiServiceName(group, version);
    if (remote.has(name)) continue;
    const custom = customGroups.has(group) && !(group in GROUP_PRIORITY);
    want.set(name, {
      apiVersion: "apiregistration.k8s.io/v1",
      kind: "APIService",
      metadata: { name, labels: { [AUTOMANAGED_LABEL]: "onstart" } },
      spec: {
        group,
        version,
        groupPriorityMinimum: custom
          ? CUSTOM_GROUP_PRIORITY
          : (GROUP_PRIORITY[group] ?? OTHER_GROUP_PRIORITY),
        versionPriority: custom ? 100 : versionPriority(group, version),
      },
    });
  }
  const have = new Map(existing.map((s) => [s.metadata.name!, s]));
  for (const [name, svc] of want) {
    if (have.has(name)) continue;
    try {
      await ctx.api.create(APISERVICE, svc);
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
    }
  }
  for (const [name, svc] of have) {
    if (want.has(name) || svc.spec?.service || !svc.metadata.labels?.[AUTOMANAGED_LABEL]) continue;
    try {
      await ctx.api.remove(APISERVICE, undefined, name);
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }
}

export const apiServiceRegistration: Controller = {
  name: "apiservice-autoregister",
  workers: 1,
  watches: {
    // a CRD established or gone changes what is served; an automanaged APIService deleted
    // by hand comes back
    [CRDS]: (_crd, _old, ctx) => {
      // (the server's discovery may take a moment to list a newly established CRD)
      ctx.enqueue(KEY, 2000);
      return [KEY];
    },
    [APISERVICES]: (obj, old) => (!obj.spec?.service || old?.spec?.service ? [KEY] : []),
  },
  resync: () => [KEY],
  sync,
};
