// A Node's pod CIDRs: upstream's validation (valid CIDRs, one per family, set once), the
// podCIDR/podCIDRs pairing, and the one rule upstream leaves to its single allocator: no two
// Nodes may hold overlapping pod CIDRs inside the cluster CIDR. The nodes store shard checks it
// in its single-threaded commit path (as for Service IPs), so the node IPAM controller, a node
// agent's --pod-cidr and a user's own Node can never end up sharing addresses; a restart of
// the controller can never hand out a block twice, since the ledger is the stored Nodes.
import { field, type StatusCause } from "../errors";
import { blocksOf, networkOf, parseCIDR } from "../network";
import type { Allocator, AllocatorContext } from "../resource";
import type { KubeObject } from "../types";

const arr = (v: unknown): string[] => (Array.isArray(v) ? v.filter((s) => typeof s === "string") : []);

/** podCIDRs as stored: the list, or the singular field alone. */
export function podCIDRsOf(node: KubeObject): string[] {
  const list = arr(node.spec?.podCIDRs);
  if (list.length) return list;
  return typeof node.spec?.podCIDR === "string" && node.spec.podCIDR ? [node.spec.podCIDR] : [];
}

/** Pairs the two fields as upstream's conversion does: podCIDR is podCIDRs[0]. */
export function pairPodCIDRs(obj: KubeObject): void {
  const spec = obj.spec;
  if (!spec || typeof spec !== "object") return;
  const list = arr(spec.podCIDRs);
  if (!list.length && typeof spec.podCIDR === "string" && spec.podCIDR) spec.podCIDRs = [spec.podCIDR];
  else if (list.length && !spec.podCIDR) spec.podCIDR = list[0];
}

const isIPv6CIDR = (s: string) => /^[0-9a-fA-F:.]*:[0-9a-fA-F:.]*\/\d{1,3}$/.test(s);

export function validatePodCIDRs(obj: KubeObject, old: KubeObject | undefined): StatusCause[] {
  const causes: StatusCause[] = [];
  const spec = obj.spec ?? {};
  const list = arr(spec.podCIDRs);
  list.forEach((cidr, i) => {
    if (!parseCIDR(cidr) && !isIPv6CIDR(cidr))
      causes.push(
        field.invalid(
          `spec.podCIDRs[${i}]`,
          cidr,
          "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
        ),
      );
  });
  if (list.length > 1) {
    const v4 = list.filter((c) => parseCIDR(c)).length;
    if (list.length > 2 || v4 !== 1)
      causes.push(
        field.invalidShown(
          "spec.podCIDRs",
          `[]string{${list.map((s) => JSON.stringify(s)).join(", ")}}`,
          "may specify no more than one CIDR for each IP family",
        ),
      );
  }
  if (spec.podCIDR && list.length && spec.podCIDR !== list[0])
    causes.push(field.invalid("spec.podCIDR", spec.podCIDR, "must match the first entry of spec.podCIDRs"));
  // the controller (or the node) may set it once; then it stays
  const before = old ? podCIDRsOf(old) : [];
  if (before.length && JSON.stringify(before) !== JSON.stringify(podCIDRsOf(obj)))
    causes.push(
      field.forbidden("spec.podCIDRs", 'node updates may not change podCIDR except from "" to valid'),
    );
  return causes;
}

const blockKey = (i: number) => `block:${i}`;

export const nodeCIDRs: Allocator = {
  held(obj: KubeObject, env = {}): string[] {
    const { blocks } = networkOf(env);
    return heldWith(obj, blocks);
  },

  allocate(obj: KubeObject, old: KubeObject | undefined, ctx: AllocatorContext): StatusCause[] {
    const { blocks, settings } = networkOf(ctx.env);
    const mine = new Set(old ? heldWith(old, blocks) : []);
    const causes: StatusCause[] = [];
    podCIDRsOf(obj).forEach((cidr, i) => {
      const taken = blocksOf(blocks, cidr).filter((b) => !mine.has(blockKey(b)) && ctx.taken(blockKey(b)));
      if (taken.length)
        causes.push(
          field.invalid(
            `spec.podCIDRs[${i}]`,
            cidr,
            `overlaps the podCIDR of another node (cluster CIDR ${settings.clusterCIDR} is handed out in /${settings.nodeCIDRMaskSize} blocks, one node each)`,
          ),
        );
    });
    return causes;
  },
};

function heldWith(obj: KubeObject, blocks: ReturnType<typeof networkOf>["blocks"]): string[] {
  const keys: string[] = [];
  for (const cidr of podCIDRsOf(obj)) for (const b of blocksOf(blocks, cidr)) keys.push(blockKey(b));
  return keys;
}
