// GET/LIST componentstatuses: each part of the control plane probed as the request comes,
// as upstream probes its scheduler's and controller manager's /healthz and its etcd. Here
// the parts are the scheduler's and the controller manager's Durable Objects (healthy once
// their caches are filled) and the store (a shard answers a read: /healthz's etcd check).
// A probe that fails or takes too long makes its component's Healthy condition Unknown,
// with the reason as the error, as upstream does for a probe that cannot reach its server.
import { notFound } from "../../api/errors";
import { matches, parseFieldSelector, parseLabelSelector } from "../../api/selectors";
import { componentstatuses } from "../../api/strategies/component-statuses";
import { TABLE_TYPE, table } from "../../api/table";
import type { KubeObject } from "../../api/types";
import type { Env } from "../../durable-objects/env";
import { negotiate, type Output } from "../encoding/negotiate";
import { json } from "../encoding/respond";
import { warningHeaders } from "../encoding/warnings";
import { storeCheck } from "./health";
import { respondWith, type WriteContext } from "./write-context";

const PROBE_MS = 5000;

/** The components by name (sorted, as upstream lists them); each probe resolves to its message. */
const PROBES: [string, (env: Env) => Promise<string>][] = [
  [
    "controller-manager",
    (env) => env.CONTROLLERS.get(env.CONTROLLERS.idFromName(env.EDGEPLANE_CLUSTER)).healthz(),
  ],
  ["etcd-0", (env) => storeCheck.run(env).then(() => "ok")],
  ["scheduler", (env) => env.SCHEDULER.get(env.SCHEDULER.idFromName(env.EDGEPLANE_CLUSTER)).healthz()],
];

async function probe(env: Env, name: string, run: (env: Env) => Promise<string>): Promise<KubeObject> {
  let condition: { type: string; status: string; message?: string; error?: string };
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer in ${PROBE_MS / 1000}s`)), PROBE_MS);
    });
    const message = await Promise.race([run(env), late]);
    condition = { type: "Healthy", status: "True", message };
  } catch (e) {
    condition = { type: "Healthy", status: "Unknown", error: e instanceof Error ? e.message : String(e) };
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
  // a zero creationTimestamp, which Go's JSON writes as null
  return {
    kind: "ComponentStatus",
    apiVersion: "v1",
    metadata: { name, creationTimestamp: null },
    conditions: [condition],
  } as unknown as KubeObject;
}

export async function componentStatuses(w: WriteContext): Promise<Response> {
  const { c, info } = w;
  const def = componentstatuses;
  if (def.deprecation) w.warnings.push(def.deprecation);
  const q = c.get("url").searchParams;
  const out = negotiate(c.req.header("accept"), q.get("includeObject"));
  if (info.verb === "get") {
    const found = PROBES.find(([name]) => name === info.name);
    // upstream answers an unknown name with a bare error (a 500); a 404 says what it is
    if (!found) throw notFound({ group: "", resource: def.resource }, info.name);
    const obj = await probe(c.env, ...found);
    if (out.kind === "table") return tableAnswer(w, out, [obj]);
    return respondWith(w, JSON.stringify(obj), 200);
  }
  // a component has no labels; its one selectable field is metadata.name
  const labels = parseLabelSelector(q.get("labelSelector"));
  const fields = parseFieldSelector(q.get("fieldSelector"));
  const chosen = PROBES.filter(([name]) => matches(labels, {}) && matches(fields, { "metadata.name": name }));
  const items = await Promise.all(chosen.map(([name, run]) => probe(c.env, name, run)));
  if (out.kind === "table") return tableAnswer(w, out, items);
  return respondWith(w, JSON.stringify({ kind: def.listKind, apiVersion: "v1", metadata: {}, items }), 200);
}

function tableAnswer(w: WriteContext, out: Output & { kind: "table" }, items: KubeObject[]): Response {
  const t = table(componentstatuses, items, { include: out.include, headers: true });
  return json(t, 200, { "content-type": TABLE_TYPE, warning: warningHeaders(w.warnings).join(", ") });
}
