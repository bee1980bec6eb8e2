// POST /edgeplane/metrics/<node>: a node agent's resource-usage report (api/wire/metrics.ts),
// kept by the cluster's MetricsObject. Authorization has already decided who may post here:
// the Node authorizer lets system:node:<name> post only its own path; anyone else needs RBAC
// on the non-resource URL (cluster-admin has it: the simulated nodes report with it). The
// report's pods must be bound to <node>: one that is not refuses the report with 403.
import { badRequest, forbidden, notFoundPath } from "../../api/errors";
import { METRICS_REPORT_PREFIX, parseMetricsReport } from "../../api/wire/metrics";
import type { Env } from "../../durable-objects/env";
import { decodeObject } from "../encoding/request-body";
import { json } from "../encoding/respond";
import { metricsStub } from "./metrics";

export const METRICS_REPORT_ROUTE = `${METRICS_REPORT_PREFIX}:node`;

export async function handleMetricsReport(req: Request, env: Env, node: string): Promise<Response> {
  if (!node || node.includes("/")) throw notFoundPath();
  const report = parseMetricsReport(await decodeObject(req));
  if (typeof report === "string") throw badRequest(`invalid metrics report: ${report}`);
  const r = await metricsStub(env).report(node, report);
  if (!r.ok)
    throw forbidden(
      `node "${node}" may not report metrics of pods not bound to it: ${r.forbidden.slice(0, 5).join(", ")}`,
    );
  return json({ kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", code: 200 }, 200);
}
