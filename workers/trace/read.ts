// GET /apis/trace.edgeplane.dev/v1alpha1/namespaces/<ns>/podtraces/<pod>: a pod's flow trace
// (api/trace.ts) as {"pod": {...}, "stages": [...]}, in the order the pod went through
// FLOW.md. Whoever may `get` the pod may read it (authorized here as that get); a missing pod
// is the pod's own 404.
import type { Context } from "hono";
import { lookupGVR } from "../../api/registry";
import type { ResourceDef } from "../../api/resource";
import {
  noteDroppedRestarts,
  orderSpans,
  rfc3339Nano,
  type TraceSpan,
  type TraceStage,
} from "../../api/trace";
import type { KubeObject } from "../../api/types";
import { Store } from "../../durable-objects/store/client";
import { enabledPlugins } from "../admission/index";
import type { AppEnv } from "../app-env";
import { authorizeRequest } from "../authz/index";
import { json } from "../encoding/respond";

export const POD_TRACE_ROUTE = "/apis/trace.edgeplane.dev/v1alpha1/namespaces/:namespace/podtraces/:name";

const PODS = lookupGVR("", "v1", "pods")!;

/** Owner kinds whose objects a trace's owner chain walks, and where they are served. */
const OWNER_KINDS: Record<string, [string, string, string]> = {
  ReplicaSet: ["apps", "v1", "replicasets"],
  Deployment: ["apps", "v1", "deployments"],
  StatefulSet: ["apps", "v1", "statefulsets"],
  DaemonSet: ["apps", "v1", "daemonsets"],
  Job: ["batch", "v1", "jobs"],
  CronJob: ["batch", "v1", "cronjobs"],
};

export async function handlePodTrace(c: Context<AppEnv>): Promise<Response> {
  const namespace = c.req.param("namespace") ?? "";
  const name = c.req.param("name") ?? "";
  const url = c.get("url");
  await authorizeRequest(
    {
      user: c.get("user"),
      verb: "get",
      apiGroup: "",
      apiVersion: "v1",
      resource: "pods",
      subresource: "",
      namespace,
      name,
      path: url.pathname,
      isResourceRequest: true,
    },
    c.env,
  );
  const { body, spans } = await new Store(c.env, PODS).podTrace(namespace, name);
  // the admission chain as configured (each pod's span keeps only which plugins changed it)
  const admission = spans.find((s) => s.step === "2.3");
  if (admission) {
    const plugins = enabledPlugins(
      (c.env as { EDGEPLANE_ADMISSION_PLUGINS?: string }).EDGEPLANE_ADMISSION_PLUGINS,
    );
    admission.detail = {
      ...admission.detail,
      mutating: plugins.filter((p) => p.mutate).map((p) => p.name),
      validating: plugins.filter((p) => p.validate).map((p) => p.name),
    };
  }
  const initializers = spans.find((s) => s.step === "3.1");
  if (initializers)
    initializers.detail = {
      ...initializers.detail,
      note: "run within mutating admission, before the pod was stored",
    };
  const pod = JSON.parse(body) as KubeObject;
  const chain = await ownerChain(c.env, pod);
  return json({
    kind: "PodTrace",
    apiVersion: "trace.edgeplane.dev/v1alpha1",
    pod: podSummary(pod),
    stages: traceStages(pod, spans, chain),
  });
}

function podSummary(pod: KubeObject): Record<string, unknown> {
  const status = (pod.status ?? {}) as Record<string, any>;
  return {
    name: pod.metadata.name,
    namespace: pod.metadata.namespace,
    uid: pod.metadata.uid,
    phase: status.phase ?? "Pending",
    nodeName: (pod.spec as any)?.nodeName,
    creationTimestamp: pod.metadata.creationTimestamp,
    startTime: status.startTime,
    podIP: status.podIP,
    conditions: status.conditions ?? [],
  };
}

interface ChainLink {
  kind: string;
  name: string;
  uid?: string;
  created?: string;
}

/** The pod's controllers, nearest first (ReplicaSet, then its Deployment), read from the store. */
async function ownerChain(env: AppEnv["Bindings"], pod: KubeObject): Promise<ChainLink[]> {
  const out: ChainLink[] = [];
  let obj: KubeObject | undefined = pod;
  for (let i = 0; i < 3 && obj; i++) {
    const ref: { kind: string; name: string; uid?: string } | undefined = (
      obj.metadata.ownerReferences ?? []
    ).find((r) => r.controller);
    if (!ref) break;
    const link: ChainLink = { kind: ref.kind, name: ref.name, uid: ref.uid };
    out.push(link);
    const where: [string, string, string] | undefined = OWNER_KINDS[ref.kind];
    const def: ResourceDef | undefined = where && lookupGVR(where[0], where[1], where[2]);
    obj = def
      ? await new Store(env, def).find(pod.metadata.namespace ?? "", ref.name).catch(() => undefined)
      : undefined;
    if (obj && obj.metadata.uid === ref.uid) link.created = obj.metadata.creationTimestamp;
    else obj = undefined;
  }
  return out;
}

/** A failure the pod's own status shows that no span has recorded yet (e.g. the trace began late). */
function statusStages(pod: KubeObject, spans: TraceSpan[]): TraceSpan[] {
  const out: TraceSpan[] = [];
  const status = (pod.status ?? {}) as Record<string, any>;
  const scheduled = (status.conditions ?? []).find((c: any) => c.type === "PodScheduled");
  const hasScheduling = spans.some((s) => s.step === "5.1");
  if (!(pod.spec as any)?.nodeName && !hasScheduling && scheduled?.status === "False") {
    out.push({
      step: "5.1",
      name: "scheduling",
      component: "scheduler",
      start: Date.parse(scheduled.lastTransitionTime ?? "") || Date.now(),
      state: "waiting",
      reason: `${scheduled.reason ?? "Unschedulable"}: ${scheduled.message ?? ""}`.trim(),
    });
  }
  return out;
}

export function traceStages(pod: KubeObject, spans: TraceSpan[], chain: ChainLink[]): TraceStage[] {
  const all = [...spans, ...statusStages(pod, spans)];
  if (chain.length) {
    const controller = spans.find((s) => s.step === "4.1");
    const at = controller?.start ?? (Date.parse(pod.metadata.creationTimestamp ?? "") || Date.now());
    const links = [...chain].reverse().map((l) => `${l.kind}/${l.name}`);
    all.push({
      step: "4.2",
      name: "owner chain",
      component: "controllers",
      start: at,
      end: at,
      detail: {
        chain: [...links, `Pod/${pod.metadata.name}`],
        owners: [...chain].reverse(),
      },
    });
  }
  // how long after the pod was bound the node agent picked it up
  const bound = spans.find((s) => s.step === "5.3");
  const picked = spans.find((s) => s.step === "6.1");
  if (bound?.end !== undefined && picked)
    picked.detail = {
      ...picked.detail,
      afterBindingMs: Math.round((picked.start - bound.end) * 1000) / 1000,
    };
  return orderSpans(noteDroppedRestarts(all)).map((s) => {
    const stage: TraceStage = {
      step: s.step,
      name: s.name,
      component: s.component,
      start: rfc3339Nano(s.start),
      state: s.state ?? (s.end === undefined ? "waiting" : "done"),
      detail: s.detail ?? {},
    };
    if (s.end !== undefined) {
      stage.end = rfc3339Nano(s.end);
      stage.durationMs = Math.round((s.end - s.start) * 1000) / 1000;
    }
    if (s.reason) stage.reason = s.reason;
    return stage;
  });
}
