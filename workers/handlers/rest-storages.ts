// Resources served by a REST storage of their own instead of the generic store path, as
// upstream registers a storage per resource: componentstatuses are probed when asked, the
// metrics API is drawn from the nodes' usage reports, a
// core/v1 Binding binds a pod, and the review kinds answer a question without storing
// anything. handleResource looks a resource up here and knows none of them by name.
import type { ResourceDef } from "../../api/resource";
import { clusters } from "../../api/strategies/clusters";
import { componentstatuses } from "../../api/strategies/component-statuses";
import { nodemetrics, podmetrics } from "../../api/strategies/metrics";
import { bindings } from "../../api/strategies/pods";
import {
  localsubjectaccessreviews,
  selfsubjectaccessreviews,
  selfsubjectreviews,
  selfsubjectrulesreviews,
  subjectaccessreviews,
  tokenreviews,
} from "../../api/strategies/reviews";
import { selfSubjectReview, tokenReview } from "../authn/index";
import { handleReview } from "../authz/index";
import { deleteCluster } from "../clusters/handlers";
import { decodeObject } from "../encoding/request-body";
import { legacyBinding } from "./binding";
import { componentStatuses } from "./component-statuses";
import { nodeMetricsHandler, podMetricsHandler } from "./metrics";
import { respondWith, type WriteContext } from "./write-context";

/** A verb's handler: the request's context and its namespace ("" for cluster-scoped). */
export type RestHandler = (w: WriteContext, namespace: string) => Promise<Response>;

/** An authorization review: answered for the requester, 201 as upstream's create. */
const accessReview: RestHandler = async (w, namespace) => {
  const { c, def } = w;
  const review = await handleReview(
    def.resource,
    await decodeObject(c.req.raw),
    c.get("user"),
    c.env,
    namespace,
  );
  return respondWith(w, JSON.stringify(review), 201);
};

export const REST_STORAGES = new Map<ResourceDef, Partial<Record<string, RestHandler>>>([
  [componentstatuses, { get: componentStatuses, list: componentStatuses }],
  // metrics.k8s.io: the Nodes and Pods joined with the nodes' latest usage reports
  [nodemetrics, { get: nodeMetricsHandler, list: nodeMetricsHandler }],
  [podmetrics, { get: podMetricsHandler, list: podMetricsHandler }],
  // a cluster's delete tears down everything it holds first (docs/clusters.md)
  [clusters, { delete: (w) => deleteCluster(w) }],
  [bindings, { create: legacyBinding }],
  [
    tokenreviews,
    {
      create: async (w) =>
        respondWith(w, JSON.stringify(await tokenReview(w.c.env, await decodeObject(w.c.req.raw))), 201),
    },
  ],
  [
    selfsubjectreviews,
    {
      create: async (w) => {
        await decodeObject(w.c.req.raw); // a malformed body is refused as upstream's
        return respondWith(w, JSON.stringify(selfSubjectReview(w.c.get("user"))), 201);
      },
    },
  ],
  [selfsubjectaccessreviews, { create: accessReview }],
  [selfsubjectrulesreviews, { create: accessReview }],
  [subjectaccessreviews, { create: accessReview }],
  [localsubjectaccessreviews, { create: accessReview }],
]);
