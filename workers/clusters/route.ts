// Serving many clusters from one Worker (docs/clusters.md): a request under
// /clusters/<name>/ is served, with the prefix taken off, by the same app in that cluster's
// environment (its own Durable Objects, keys and credentials); everything else is the root
// cluster's. The name must be a Cluster object of the root: anything else is a 404 Status,
// never a fall-through to the root. The URL parser has already resolved dot segments
// (/clusters/a/../b is /clusters/b: b then authenticates the request as any of its own), and an
// encoded slash is no separator: "a%2F..%2Fb" is not a cluster name.
import { StatusError } from "../../api/errors";
import { CLUSTERS_GROUP } from "../../api/strategies/clusters";
import { childEnv, isClusterName } from "../../durable-objects/clusters";
import type { Env } from "../../durable-objects/env";
import { errorResponse } from "../encoding/respond";
import { withClusterCertificate } from "./client-certs";
import { takeRequest } from "./limits";
import { findCluster } from "./lookup";

export const CLUSTERS_PREFIX = "/clusters/";

type Serve = (req: Request, env: Env, ctx: ExecutionContext) => Response | Promise<Response>;

function clusterNotFound(name: string): StatusError {
  const shown = name.length > 63 ? `${name.slice(0, 63)}...` : name;
  return new StatusError(404, "NotFound", `clusters.${CLUSTERS_GROUP} "${shown}" not found`, {
    name: shown,
    group: CLUSTERS_GROUP,
    kind: "clusters",
  });
}

/** The app for `req`: the root cluster's, or the one its path names. */
export async function serveCluster(
  req: Request,
  env: Env,
  ctx: ExecutionContext,
  serve: Serve,
): Promise<Response> {
  const url = new URL(req.url);
  if (!url.pathname.startsWith(CLUSTERS_PREFIX)) return serve(req, env, ctx);
  try {
    const rest = url.pathname.slice(CLUSTERS_PREFIX.length);
    const slash = rest.indexOf("/");
    const name = slash < 0 ? rest : rest.slice(0, slash);
    if (!isClusterName(name)) throw clusterNotFound(name);
    const ref = await findCluster(env, name);
    if (!ref) throw clusterNotFound(name);
    takeRequest(ref.key, ref.requestsPerSecond);
    url.pathname = slash < 0 ? "/" : rest.slice(slash);
    // a client certificate counts only when this cluster's own CA issued it (client-certs.ts)
    const forwarded = await withClusterCertificate(new Request(url, req), env, ref.key);
    return await serve(forwarded, childEnv(env, ref.key), ctx);
  } catch (e) {
    return errorResponse(e);
  }
}
