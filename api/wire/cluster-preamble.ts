// How a node's apiserver relay (agent/network/relay.ts) tells the local front door which
// cluster a pod's connection to the `kubernetes` Service belongs to. The pod's TLS session
// runs end to end with the front door, so the relay cannot change the paths inside it; it
// sends one line before the pod's first byte instead, and the front door serves that
// connection's requests under /clusters/<name>/ as if the pod had asked for them there.
// Choosing a cluster this way gives nothing a URL does not: every request still
// authenticates against that cluster's own credentials.

/** The line's start; the cluster's name and CRLF follow. */
export const CLUSTER_PREAMBLE = "EDGEPLANE-CLUSTER ";

/** The longest line the front door reads: the prefix, a DNS-1123 label and CRLF. */
export const CLUSTER_PREAMBLE_MAX = CLUSTER_PREAMBLE.length + 63 + 2;

const LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The line a relay sends first for cluster `name` (ASCII). */
export function clusterPreamble(name: string): string {
  if (!LABEL.test(name)) throw new Error(`not a cluster name: ${name}`);
  return `${CLUSTER_PREAMBLE}${name}\r\n`;
}

/** The cluster named by a --server URL's path (/clusters/<name>), undefined for the root. */
export function clusterOfServer(server: string): string | undefined {
  const path = new URL(server).pathname.replace(/\/+$/, "");
  const m = /^\/clusters\/([^/]+)$/.exec(path);
  return m && LABEL.test(m[1]!) ? m[1] : undefined;
}

/**
 * What the first bytes of a connection say, given as latin1 text (at most
 * CLUSTER_PREAMBLE_MAX of them are looked at): "none" (not a preamble), "partial" (the line may
 * still come), "bad" (a preamble that is not one), or the cluster's name and the line's length.
 */
export function readClusterPreamble(
  first: string,
): "none" | "partial" | "bad" | { cluster: string; length: number } {
  const n = Math.min(first.length, CLUSTER_PREAMBLE.length);
  if (first.slice(0, n) !== CLUSTER_PREAMBLE.slice(0, n)) return "none";
  const end = first.indexOf("\r\n");
  if (end < 0 || end + 2 > CLUSTER_PREAMBLE_MAX)
    return first.length >= CLUSTER_PREAMBLE_MAX ? "bad" : "partial";
  const name = first.slice(CLUSTER_PREAMBLE.length, end);
  if (!LABEL.test(name)) return "bad";
  return { cluster: name, length: end + 2 };
}
