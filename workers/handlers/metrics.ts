// GET/LIST metrics.k8s.io/v1beta1 nodes and pods: the Nodes and Pods the store has (by label
// and field selector, one namespace or all), each joined with its node's latest report held in
// the cluster's MetricsObject, as metrics-server joins its informers' objects with its last
// scrape. An object with no fresh sample is left out of a list; a get of one is 404
// (`podmetrics.metrics.k8s.io "ns/name" not found`), and of an object that does not exist is
// its lister's 404 (`pods "name" not found`, `node "name" not found`), as metrics-server answers.
import { notFound } from "../../api/errors";
import { METRICS_API_VERSION, METRICS_GROUP, nodeMetrics, podMetrics } from "../../api/metrics";
import { lookupGVR } from "../../api/registry";
import type { ResourceDef } from "../../api/resource";
import { matches, parseFieldSelector } from "../../api/selectors";
import { TABLE_TYPE, table } from "../../api/table";
import type { KubeObject } from "../../api/types";
import type { Env } from "../../durable-objects/env";
import { Store } from "../../durable-objects/store/client";
import { negotiate } from "../encoding/negotiate";
import { json } from "../encoding/respond";
import { warningHeaders } from "../encoding/warnings";
import { respondWith, type WriteContext } from "./write-context";

const NODES = lookupGVR("", "v1", "nodes")!;
const PODS = lookupGVR("", "v1", "pods")!;

/** The cluster's MetricsObject (one per cluster, named by it). */
export function metricsStub(env: Env) {
  return env.METRICS.get(env.METRICS.idFromName(env.EDGEPLANE_CLUSTER));
}

function itemsOf(text: string): KubeObject[] {
  const list = JSON.parse(text) as { items?: KubeObject[] };
  return Array.isArray(list.items) ? list.items : [];
}

/** Objects a field selector keeps: metrics-server matches metadata.name (and .namespace). */
function byFields(objs: KubeObject[], fieldSelector: string | null): KubeObject[] {
  const sel = parseFieldSelector(fieldSelector);
  if (!sel.length) return objs;
  return objs.filter((o) => {
    const fields: Record<string, string> = { "metadata.name": o.metadata.name ?? "" };
    if (o.metadata.namespace !== undefined) fields["metadata.namespace"] = o.metadata.namespace;
    return matches(sel, fields);
  });
}

function answer(w: WriteContext, def: ResourceDef, one: KubeObject | undefined, items: KubeObject[]) {
  const q = w.c.get("url").searchParams;
  const out = negotiate(w.c.req.header("accept"), q.get("includeObject"));
  if (out.kind === "table") {
    const t = table(def, one ? [one] : items, { include: out.include, headers: true });
    const headers: Record<string, string> = { "content-type": TABLE_TYPE };
    if (w.warnings.length) headers.warning = warningHeaders(w.warnings).join(", ");
    return json(t, 200, headers);
  }
  if (one) return respondWith(w, JSON.stringify(one), 200);
  const list = { kind: def.listKind, apiVersion: METRICS_API_VERSION, metadata: {}, items };
  return respondWith(w, JSON.stringify(list), 200);
}

export async function nodeMetricsHandler(w: WriteContext): Promise<Response> {
  const { c, info } = w;
  const def = w.def;
  const store = new Store(c.env, NODES);
  const metrics = metricsStub(c.env);
  if (info.verb === "get") {
    const node = await store.find("", info.name);
    if (!node) throw notFound({ group: "", resource: "node" }, info.name);
    const s = (await metrics.nodeSamples([info.name]))[info.name];
    if (!s) throw notFound({ group: METRICS_GROUP, resource: "nodemetrics" }, info.name);
    return answer(w, def, nodeMetrics(node, s), []);
  }
  const q = c.get("url").searchParams;
  const [text, samples] = await Promise.all([
    store.listText({ labelSelector: q.get("labelSelector") ?? undefined }),
    metrics.nodeSamples(),
  ]);
  const now = Date.now();
  const items = byFields(itemsOf(text), q.get("fieldSelector"))
    .filter((n) => samples[n.metadata.name ?? ""])
    .map((n) => nodeMetrics(n, samples[n.metadata.name ?? ""], now))
    .sort((a, b) => (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""));
  return answer(w, def, undefined, items);
}

export async function podMetricsHandler(w: WriteContext, namespace: string): Promise<Response> {
  const { c, info } = w;
  const def = w.def;
  const store = new Store(c.env, PODS);
  const metrics = metricsStub(c.env);
  if (info.verb === "get") {
    const pod = await store.find(namespace, info.name);
    if (!pod) throw notFound({ group: "", resource: "pods" }, info.name);
    const uid = pod.metadata.uid ?? "";
    const s = (await metrics.podSamples([uid]))[uid];
    if (!s) throw notFound({ group: METRICS_GROUP, resource: "podmetrics" }, `${namespace}/${info.name}`);
    return answer(w, def, podMetrics(pod, s), []);
  }
  const q = c.get("url").searchParams;
  const text = await store.listText({
    namespace: namespace || undefined,
    labelSelector: q.get("labelSelector") ?? undefined,
  });
  const pods = byFields(itemsOf(text), q.get("fieldSelector"));
  const samples = pods.length ? await metrics.podSamples(pods.map((p) => p.metadata.uid ?? "")) : {};
  const now = Date.now();
  const items = pods
    .filter((p) => samples[p.metadata.uid ?? ""])
    .map((p) => podMetrics(p, samples[p.metadata.uid ?? ""], now))
    .sort(
      (a, b) =>
        (a.metadata.namespace ?? "").localeCompare(b.metadata.namespace ?? "") ||
        (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""),
    );
  return answer(w, def, undefined, items);
}
