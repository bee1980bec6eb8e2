// Connections a node's apiserver relay opened for a pod of a cluster other than the root
// (api/wire/cluster-preamble.ts): the front door reads the relay's line, then serves every
// request of the connection under /clusters/<name>/, HTTP/1.1 and HTTP/2 alike.
import type net from "node:net";
import { CLUSTER_PREAMBLE_MAX, readClusterPreamble } from "../api/wire/cluster-preamble";

/**
 * Reads a cluster preamble at the start of `client`, whose first bytes are `first`; then calls
 * `go` with what follows the line (possibly nothing yet) and the cluster's path, or with
 * `first` itself and no path when the connection does not start with one. A malformed line
 * closes the connection.
 */
export function takeClusterPreamble(
  client: net.Socket,
  first: Buffer,
  go: (bytes: Buffer, clusterPath: string | undefined) => void,
): void {
  const seen = readClusterPreamble(first.toString("latin1", 0, CLUSTER_PREAMBLE_MAX));
  if (seen === "none") go(first, undefined);
  else if (seen === "bad") client.destroy();
  else if (seen === "partial")
    client.once("data", (more: Buffer) => takeClusterPreamble(client, Buffer.concat([first, more]), go));
  else {
    const path = `/clusters/${seen.cluster}`;
    const rest = first.subarray(seen.length);
    if (rest.length) go(rest, path);
    else client.once("data", (next: Buffer) => go(next, path));
  }
}

/** A request target under the cluster's path (origin-form targets only: "/api/..."). */
export function underCluster(target: string, clusterPath: string | undefined): string {
  return clusterPath && target.startsWith("/") ? clusterPath + target : target;
}

/**
 * An HTTP/1.1 request (`chunk`, its head ending at `end`) whose request line's target is put
 * under the cluster's path; the chunk and where its head now ends.
 */
export function requestUnderCluster(
  chunk: Buffer,
  end: number,
  clusterPath: string | undefined,
): { chunk: Buffer; end: number } {
  if (!clusterPath) return { chunk, end };
  const space = chunk.indexOf(0x20);
  if (space < 0 || space > end || chunk[space + 1] !== 0x2f /* "/" */) return { chunk, end };
  const prefix = Buffer.from(clusterPath, "latin1");
  return {
    chunk: Buffer.concat([chunk.subarray(0, space + 1), prefix, chunk.subarray(space + 1)]),
    end: end + prefix.length,
  };
}
