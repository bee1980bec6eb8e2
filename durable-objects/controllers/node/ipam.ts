// The node IPAM controller (upstream kube-controller-manager --allocate-node-cidrs, range
// allocator): every Node without a podCIDR gets a free block of the cluster CIDR, and a
// deleted Node's block is free again. What is taken is what the Nodes hold: the cache is filled
// from the store before the first sync and this controller's own writes land in it at once, and
// it runs one sync at a time, so it never hands a block out twice. The nodes store shard refuses
// a Node whose podCIDR overlaps another's (api/strategies/node-cidrs.ts): a stale view can only
// cost a retry, never a shared block, across restarts too.
import { StatusError } from "../../../api/errors";
import { blockCIDR, blocksOf, type NodeBlocks, networkOf } from "../../../api/network";
import { lookupGVR } from "../../../api/registry";
import { podCIDRsOf } from "../../../api/strategies/node-cidrs";
import type { KubeObject } from "../../../api/types";
import { errorMessage, isConflict, isNotFound } from "../lib/api-errors";
import type { Controller, ControllerContext } from "../runtime/controller";

const NODE = lookupGVR("", "v1", "nodes")!;

export interface NodeIpamOptions {
  /** EDGEPLANE_CLUSTER_CIDR (10.244.0.0/16) */
  clusterCIDR?: string;
  /** EDGEPLANE_NODE_CIDR_MASK_SIZE (24) */
  nodeCIDRMaskSize?: string;
}

const needsCIDR = (n: KubeObject) => !n.metadata.deletionTimestamp && podCIDRsOf(n).length === 0;

export function createNodeIpamController(opts: NodeIpamOptions = {}): Controller {
  const { blocks } = networkOf({
    EDGEPLANE_CLUSTER_CIDR: opts.clusterCIDR,
    EDGEPLANE_NODE_CIDR_MASK_SIZE: opts.nodeCIDRMaskSize,
  });
  /** where the next search starts: a released block is not handed out again at once (peers' routes to it may lag) */
  let cursor = 0;
  /** blocks the store said another node holds though the cache did not show it yet */
  const refused = new Map<number, number>();
  /** nodes told the range is full, so the event is not repeated on every resync */
  const starved = new Set<string>();

  /** the blocks each Node holds, and how many Nodes hold each block: kept by the watch, not recounted per sync */
  const holders = new Map<string, number[]>();
  const held = new Map<number, number>();
  const note = (name: string, blocksNow: number[]) => {
    for (const b of holders.get(name) ?? []) {
      const n = (held.get(b) ?? 1) - 1;
      if (n > 0) held.set(b, n);
      else held.delete(b);
    }
    if (blocksNow.length) holders.set(name, blocksNow);
    else holders.delete(name);
    for (const b of blocksNow) held.set(b, (held.get(b) ?? 0) + 1);
  };
  const blocksOfNode = (n: KubeObject) => podCIDRsOf(n).flatMap((cidr) => blocksOf(blocks, cidr));
  const rebuild = (ctx: ControllerContext) => {
    holders.clear();
    held.clear();
    for (const n of ctx.informers.list("/nodes")) note(n.metadata.name!, blocksOfNode(n));
  };

  function isTaken(b: number, ctx: ControllerContext): boolean {
    if (held.has(b)) return true;
    const until = refused.get(b);
    if (until === undefined) return false;
    if (until >= ctx.now()) return true;
    refused.delete(b);
    return false;
  }

  function pick(b: NodeBlocks, ctx: ControllerContext): number | undefined {
    for (let i = 0; i < b.count; i++) {
      const idx = (cursor + i) % b.count;
      if (!isTaken(idx, ctx)) return idx;
    }
    return undefined;
  }

  async function sync(name: string, ctx: ControllerContext): Promise<void> {
    const node = ctx.informers.get("/nodes", name);
    if (!node) {
      starved.delete(name);
      return;
    }
    if (!needsCIDR(node)) return;
    if (holders.size === 0 && ctx.informers.keys("/nodes").length > 1) rebuild(ctx);
    const idx = pick(blocks, ctx);
    if (idx === undefined) {
      if (!starved.has(name)) {
        starved.add(name);
        await ctx.recorder.event(
          node,
          "Normal",
          "CIDRNotAvailable",
          `Node ${name} status is now: CIDRNotAvailable`,
        );
      }
      return; // a deleted node frees a block and brings the waiting ones back
    }
    const cidr = blockCIDR(blocks, idx);
    try {
      await ctx.api.update(NODE, {
        ...node,
        spec: { ...(node.spec ?? {}), podCIDR: cidr, podCIDRs: [cidr] },
      });
      cursor = (idx + 1) % blocks.count;
      starved.delete(name);
    } catch (e) {
      if (isNotFound(e)) return;
      if (isConflict(e)) {
        ctx.enqueue(name); // changed meanwhile (a heartbeat): try again on the fresh object
        return;
      }
      if (
        e instanceof StatusError &&
        e.code === 422 &&
        /overlaps the podCIDR of another node/.test(e.message)
      ) {
        // the store knows a holder the cache has not seen yet: skip the block for a while
        refused.set(idx, ctx.now() + 60_000);
        ctx.enqueue(name);
        return;
      }
      await ctx.recorder
        .event(node, "Warning", "CIDRAssignmentFailed", `Node ${name}: ${errorMessage(e)}`)
        .catch(() => {});
      throw e;
    }
  }

  return {
    name: "node-ipam-controller",
    // one at a time: a block picked is written (and cached) before the next is picked
    workers: 1,
    watches: {
      "/nodes": (node, old, ctx) => {
        const name = node.metadata.name!;
        const gone = !ctx.informers.get("/nodes", name);
        note(name, gone ? [] : blocksOfNode(node));
        if (!gone && needsCIDR(node)) return [name];
        // a node that is gone (or going) frees its block for those waiting
        if ((gone || node.metadata.deletionTimestamp) && old && podCIDRsOf(old).length && starved.size)
          return [...starved];
        return [];
      },
    },
    resync: (ctx) => {
      rebuild(ctx);
      return ctx.informers
        .list("/nodes")
        .filter(needsCIDR)
        .map((n) => n.metadata.name!);
    },
    sync,
  };
}
