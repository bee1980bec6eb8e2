// The record that ties a node's credentials to the one agent that may use them (read by
// workers/authn/node-binding.ts, written there on a token join and by the CSR signer on a
// certificate join): a Secret in kube-system, type edgeplane.io/node-credential, named for the
// node, whose annotations name the node, the agent and, once the node registered, its Node's uid.
// A token's agent is the id its credential carries; a certificate agent is "x509:<time>": the
// node's client certificates valid from that time on (the join's and its rotations') are its,
// earlier ones belong to an agent since replaced.
import type { KubeObject } from "./types";

export const RECORD_NAMESPACE = "kube-system";
export const RECORD_TYPE = "edgeplane.io/node-credential";
const PREFIX = "node-credential.";
export const AGENT_ANNOTATION = "edgeplane.io/node-agent";
export const NODE_ANNOTATION = "edgeplane.io/node";
export const NODE_UID_ANNOTATION = "edgeplane.io/node-uid";
const CERT_AGENT = "x509:";

/** The record's name: readable when it fits in a Secret's name, a digest of the node's name otherwise. */
export async function recordName(node: string): Promise<string> {
  if (PREFIX.length + node.length <= 253) return PREFIX + node;
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(node));
  const hex = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${PREFIX}sha256-${hex}`;
}

/** The annotations of a record binding `node` to `agent` (and to its Node's uid, once known). */
export function recordAnnotations(node: string, agent: string, nodeUID: string): Record<string, string> {
  const a: Record<string, string> = { [NODE_ANNOTATION]: node, [AGENT_ANNOTATION]: agent };
  if (nodeUID) a[NODE_UID_ANNOTATION] = nodeUID;
  return a;
}

/** A new record (a Secret) binding `node` to `agent`. */
export function newRecord(name: string, node: string, agent: string, nodeUID = ""): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name,
      namespace: RECORD_NAMESPACE,
      labels: { [NODE_ANNOTATION]: "credential" },
      annotations: recordAnnotations(node, agent, nodeUID),
    },
    type: RECORD_TYPE,
  };
}

/**
 * The agent of a node whose client certificates from `notBefore` (ms) on are its own (whole
 * seconds, as a certificate's validity is written).
 */
export function certificateAgent(notBefore: number): string {
  return CERT_AGENT + new Date(Math.floor(notBefore / 1000) * 1000).toISOString();
}

/** When a certificate agent's certificates begin (ms); undefined for a token's agent. */
export function certificateAgentSince(agent: string): number | undefined {
  if (!agent.startsWith(CERT_AGENT)) return undefined;
  const t = Date.parse(agent.slice(CERT_AGENT.length));
  return Number.isNaN(t) ? undefined : t;
}

/** The node a kubelet client certificate's user stands for ("system:node:<name>" in system:nodes). */
export function nodeOfCertificateUser(name: string, groups: readonly string[]): string | undefined {
  if (!name.startsWith("system:node:") || !groups.includes("system:nodes")) return undefined;
  return name.slice("system:node:".length) || undefined;
}
