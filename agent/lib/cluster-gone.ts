// A node of a deleted cluster leaves (docs/clusters.md). The control plane says so in two
// ways: the tunnel closes with CLOSE_CLUSTER_DELETED, and every API answer is then a 404
// Status naming the cluster (details: group tenancy.edgeplane.dev, kind clusters). Either
// calls the handler the process registered (the edgelet CLI stops and exits), once.
import { CLUSTER_DELETED_REASON } from "../../api/wire/node-tunnel";

const CLUSTERS_GROUP = "tenancy.edgeplane.dev";

let handler: ((message: string) => void) | undefined;
let told = false;

/** Registers what the process does when its cluster is gone (the last registration wins). */
export function onClusterGone(fn: (message: string) => void): void {
  handler = fn;
}

export function clusterGone(message: string): void {
  if (told || !handler) return;
  told = true;
  handler(message);
}

/** Looks at an API answer: a 404 for the cluster itself means the cluster is gone. */
export function noteAnswer(status: number, body: unknown): void {
  if (status !== 404 || !handler) return;
  const s = body as
    | { kind?: string; message?: string; details?: { group?: string; kind?: string } }
    | undefined;
  if (s?.kind === "Status" && s.details?.group === CLUSTERS_GROUP && s.details.kind === "clusters")
    clusterGone(`${CLUSTER_DELETED_REASON} (${s.message ?? "not found"})`);
}
