// The node agent's spans of a pod (api/trace.ts), carried on its pods/status writes in
// TRACE_SPANS_HEADER: no call of their own. Only a status write of a pod may carry them (the
// node may write only its own pods' status: NodeRestriction), bounded per header.
import { parseSpans, TRACE_SPANS_HEADER, type TraceAppend, tracingEnabled } from "../../api/trace";
import type { KubeObject } from "../../api/types";
import type { WriteContext } from "../handlers/write-context";
import { internalUser } from "../internal";

export function statusTrace(w: WriteContext, old: KubeObject): TraceAppend | undefined {
  if (w.info.subresource !== "status" || w.def.resource !== "pods" || w.def.group !== "" || w.dryRun) return;
  const header = w.c.req.header(TRACE_SPANS_HEADER);
  if (!header || !tracingEnabled(w.c.env)) return;
  // a node speaks for its own stages only (FLOW.md 6 to 9), under its own component name
  const spans = parseSpans(header)
    .filter((s) => /^[6-9](\.|$)/.test(s.step))
    .map((s) => (s.component === "edgelet" ? s : { ...s, component: "edgelet" }));
  if (spans.length === 0) return;
  return {
    namespace: old.metadata.namespace ?? "",
    name: old.metadata.name ?? "",
    uid: old.metadata.uid ?? "",
    spans,
  };
}

/**
 * A Binding's spans (5.2 the binding write, 5.3 the pod bound), closed by the shard when the
 * pod's update is staged: a node agent can see the pod bound no earlier than that. The
 * control plane's own scheduler sends its decision (5.1) in TRACE_SPANS_HEADER on the
 * Binding, so it is kept in the same write instead of a call and a commit of its own; only
 * an in-process request may (an outside binder speaks for no stage of the trace).
 */
export function bindingTrace(w: WriteContext, pod: KubeObject, start: number): TraceAppend | undefined {
  if (w.dryRun || !tracingEnabled(w.c.env)) return;
  const node = (pod.spec as { nodeName?: string } | undefined)?.nodeName;
  const header = internalUser(w.c.req.raw) ? w.c.req.header(TRACE_SPANS_HEADER) : undefined;
  const scheduling = parseSpans(header).filter((s) => s.step === "5.1");
  return {
    namespace: pod.metadata.namespace ?? "",
    name: pod.metadata.name ?? "",
    uid: pod.metadata.uid ?? "",
    closeAtStore: true,
    spans: [
      ...scheduling,
      {
        step: "5.2",
        name: "binding",
        component: "apiserver",
        start,
        detail: { target: node, by: w.c.get("user").name },
      },
      {
        step: "5.3",
        name: "bound",
        component: "apiserver",
        start: 0,
        detail: { nodeName: node, condition: "PodScheduled=True" },
      },
    ],
  };
}
