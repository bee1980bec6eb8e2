// NodeInfo: one node plus what the scheduler has placed on it.
import type { Taint } from "./labels";
import {
  addInto,
  cloneResource,
  emptyResource,
  type Node,
  type PodInfo,
  type Resource,
  resourceFromList,
} from "./podinfo";

export interface ImageState {
  size: number;
  /** Number of nodes holding the image (shared, kept current by the cache). */
  numNodes: number;
}

let generationCounter = 0;
export function nextGeneration(): number {
  return ++generationCounter;
}

export class NodeInfo {
  node: Node | null = null;
  name = "";
  labels: Record<string, string> = {};
  taints: Taint[] = [];
  unschedulable = false;
  pods: PodInfo[] = [];
  podsWithAffinity: PodInfo[] = [];
  podsWithRequiredAntiAffinity: PodInfo[] = [];
  /** "protocol/port" -> host IPs in use. */
  usedPorts: Map<string, string[]> = new Map();
  requested: Resource = emptyResource();
  nonZeroMilliCPU = 0;
  nonZeroMemory = 0;
  allocatable: Resource = emptyResource();
  imageStates: Map<string, ImageState> = new Map();
  generation = nextGeneration();

  setNode(node: Node): void {
    this.node = node;
    this.name = node.metadata.name ?? "";
    this.labels = node.metadata.labels ?? {};
    this.taints = node.spec?.taints ?? [];
    this.unschedulable = !!node.spec?.unschedulable;
    this.allocatable = resourceFromList(node.status?.allocatable);
    this.generation = nextGeneration();
  }

  addPod(p: PodInfo): void {
    this.pods.push(p);
    if (p.hasAffinity) this.podsWithAffinity.push(p);
    if (p.requiredAntiAffinityTerms.length > 0) this.podsWithRequiredAntiAffinity.push(p);
    this.account(p, 1);
  }

  removePod(key: string): PodInfo | undefined {
    const idx = this.pods.findIndex((p) => p.key === key);
    if (idx < 0) return undefined;
    const p = this.pods[idx];
    this.pods.splice(idx, 1);
    const drop = (arr: PodInfo[]) => {
      const i = arr.indexOf(p);
      if (i >= 0) arr.splice(i, 1);
    };
    drop(this.podsWithAffinity);
    drop(this.podsWithRequiredAntiAffinity);
    this.account(p, -1);
    return p;
  }

  private account(p: PodInfo, sign: number): void {
    addInto(this.requested, p.requests, sign);
    this.nonZeroMilliCPU += sign * p.nonZeroMilliCPU;
    this.nonZeroMemory += sign * p.nonZeroMemory;
    for (const hp of p.hostPorts) {
      const k = `${hp.protocol}/${hp.port}`;
      const ips = this.usedPorts.get(k) ?? [];
      if (sign > 0) ips.push(hp.ip);
      else {
        const i = ips.indexOf(hp.ip);
        if (i >= 0) ips.splice(i, 1);
      }
      if (ips.length === 0) this.usedPorts.delete(k);
      else this.usedPorts.set(k, ips);
    }
    this.generation = nextGeneration();
  }

  /** Whether a wanted host port conflicts with one in use (0.0.0.0 conflicts with every IP). */
  portConflicts(ip: string, protocol: string, port: number): boolean {
    const ips = this.usedPorts.get(`${protocol}/${port}`);
    if (!ips) return false;
    if (ip === "0.0.0.0") return ips.length > 0;
    for (const used of ips) if (used === ip || used === "0.0.0.0") return true;
    return false;
  }

  clone(): NodeInfo {
    const c = new NodeInfo();
    c.node = this.node;
    c.name = this.name;
    c.labels = this.labels;
    c.taints = this.taints;
    c.unschedulable = this.unschedulable;
    c.pods = this.pods.slice();
    c.podsWithAffinity = this.podsWithAffinity.slice();
    c.podsWithRequiredAntiAffinity = this.podsWithRequiredAntiAffinity.slice();
    c.usedPorts = new Map();
    for (const [k, v] of this.usedPorts) c.usedPorts.set(k, v.slice());
    c.requested = cloneResource(this.requested);
    c.nonZeroMilliCPU = this.nonZeroMilliCPU;
    c.nonZeroMemory = this.nonZeroMemory;
    c.allocatable = this.allocatable;
    c.imageStates = this.imageStates;
    c.generation = this.generation;
    return c;
  }
}
