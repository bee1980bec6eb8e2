// How the local front door learns whom a credential belongs to, for its priority levels
// (local-engine/fair-queue.ts), from the one that checks it: the Worker. The front door cannot
// verify a token itself, so it treats a credential it has not seen answered as unverified; the
// first request with it carries PRIORITY_ASK_HEADER (the secret the front door shares with the
// Worker, EDGEPLANE_FRONT_SECRET), and the Worker, once it has authenticated the caller, names
// the caller's level in PRIORITY_LEVEL_HEADER on the answer. Upstream's API Priority and
// Fairness classifies the same way (after authentication) and names the level it chose on every
// answer (X-Kubernetes-PF-PriorityLevel-UID); this header names ours to the front door.

/** Request header, from the front door only: "<secret>": name this caller's priority level. */
export const PRIORITY_ASK_HEADER = "x-edgeplane-priority";
/** Response header: the authenticated caller's priority level (PriorityLevel). */
export const PRIORITY_LEVEL_HEADER = "x-edgeplane-priority-level";

/**
 * The levels a credential can be given. "system": node agents (group system:nodes: their
 * leases, Node and Pod status) and the control plane's own users (kube-scheduler,
 * kube-controller-manager), as upstream's system-node-high, system and leader-election levels;
 * "workload": every other authenticated user, as upstream's workload and global-default.
 */
export type CredentialLevel = "system" | "workload";

const SYSTEM_USERS = new Set(["system:kube-scheduler", "system:kube-controller-manager"]);

/** The level of an authenticated user. */
export function credentialLevel(user: { name: string; groups: readonly string[] }): CredentialLevel {
  return user.groups.includes("system:nodes") || SYSTEM_USERS.has(user.name) ? "system" : "workload";
}
