// The scheduler cache: every node with the pods bound (or assumed) to it,
// kept incrementally from informer-style events, and a per-cycle snapshot
// that only re-copies the nodes that changed since the previous cycle.
import { type ImageState, NodeInfo } from "./nodeinfo";
import type { VolumeLister } from "./plugins/volumebinding";
import { type Node, newPodInfo, type Pod, type PodInfo, podKey } from "./podinfo";

interface PodState {
  info: PodInfo;
  nodeName: string;
  assumed: boolean;
  bindingFinished: boolean;
  deadline: number;
}

interface ImageEntry {
  state: ImageState;
  nodes: Set<string>;
}

/** Read-only view of the cluster for one scheduling cycle. */
export class Snapshot {
  nodeInfoMap = new Map<string, NodeInfo>();
  nodeInfoList: NodeInfo[] = [];
  havePodsWithAffinityList: NodeInfo[] = [];
  havePodsWithRequiredAntiAffinityList: NodeInfo[] = [];
  namespaceLabels = new Map<string, Record<string, string>>();
  index = new Map<string, number>();
  structure = -1;
  /** the cluster's claims, volumes and classes, for VolumeBinding (none: pods' claims are not looked at) */
  volumes?: VolumeLister;

  get(name: string): NodeInfo | undefined {
    return this.nodeInfoMap.get(name);
  }

  numNodes(): number {
    return this.nodeInfoList.length;
  }

  /** Builds a snapshot straight from nodes and bound pods (tests, one-off use). */
  static from(nodes: Node[], pods: Pod[] = []): Snapshot {
    const c = new SchedulerCache();
    for (const n of nodes) c.addNode(n);
    for (const p of pods) c.addPod(p);
    const s = new Snapshot();
    c.updateSnapshot(s);
    return s;
  }
}

/** Strips registry defaults so "nginx" and "docker.io/library/nginx:latest" meet. */
export function normalizeImageName(name: string): string {
  let n = name;
  if (!n.includes("@")) {
    const slash = n.lastIndexOf("/");
    const colon = n.lastIndexOf(":");
    if (colon <= slash) n = `${n}:latest`;
  }
  if (n.startsWith("docker.io/library/")) n = n.slice("docker.io/library/".length);
  else if (n.startsWith("docker.io/")) n = n.slice("docker.io/".length);
  return n;
}

export class SchedulerCache {
  private nodes = new Map<string, NodeInfo>();
  private podStates = new Map<string, PodState>();
  private images = new Map<string, ImageEntry>();
  private namespaces = new Map<string, Record<string, string>>();
  private dirty = new Set<string>();
  private structure = 0;
  /** How long an assumed pod whose binding finished may wait for its confirming event (0: forever). */
  assumedPodTTLMs = 0;

  // ---- nodes ----

  addNode(node: Node): void {
    const name = node.metadata.name ?? "";
    let ni = this.nodes.get(name);
    if (!ni) {
      ni = new NodeInfo();
      this.nodes.set(name, ni);
    } else if (ni.node) {
      this.removeNodeImages(ni);
    }
    ni.setNode(node);
    this.addNodeImages(ni, node);
    this.structure++;
    this.dirty.add(name);
  }

  updateNode(node: Node): void {
    this.addNode(node);
  }

  removeNode(name: string): void {
    const ni = this.nodes.get(name);
    if (!ni) return;
    this.removeNodeImages(ni);
    if (ni.pods.length === 0) this.nodes.delete(name);
    else ni.node = null; // pods still reference it until their deletes arrive
    this.structure++;
  }

  private addNodeImages(ni: NodeInfo, node: Node): void {
    const states = new Map<string, ImageState>();
    for (const img of node.status?.images ?? []) {
      for (const raw of img?.names ?? []) {
        const name = normalizeImageName(raw);
        let e = this.images.get(name);
        if (!e) {
          e = { state: { size: img.sizeBytes ?? 0, numNodes: 0 }, nodes: new Set() };
          this.images.set(name, e);
        }
        e.state.size = img.sizeBytes ?? e.state.size;
        if (!e.nodes.has(ni.name)) {
          e.nodes.add(ni.name);
          e.state.numNodes = e.nodes.size;
        }
        states.set(name, e.state);
      }
    }
    ni.imageStates = states;
  }

  private removeNodeImages(ni: NodeInfo): void {
    for (const name of ni.imageStates.keys()) {
      const e = this.images.get(name);
      if (!e) continue;
      e.nodes.delete(ni.name);
      e.state.numNodes = e.nodes.size;
      if (e.nodes.size === 0) this.images.delete(name);
    }
    ni.imageStates = new Map();
  }

  // ---- namespaces (for affinity namespaceSelector) ----

  setNamespace(name: string, labels: Record<string, string> | undefined): void {
    this.namespaces.set(name, labels ?? {});
    this.structure++;
  }

  removeNamespace(name: string): void {
    this.namespaces.delete(name);
    this.structure++;
  }

  // ---- pods ----

  private nodeFor(name: string): NodeInfo {
    let ni = this.nodes.get(name);
    if (!ni) {
      ni = new NodeInfo();
      ni.name = name;
      this.nodes.set(name, ni);
    }
    return ni;
  }

  private place(info: PodInfo, nodeName: string): void {
    this.nodeFor(nodeName).addPod(info);
    this.dirty.add(nodeName);
  }

  private unplace(key: string, nodeName: string): void {
    const ni = this.nodes.get(nodeName);
    if (!ni) return;
    ni.removePod(key);
    this.dirty.add(nodeName);
    if (!ni.node && ni.pods.length === 0) this.nodes.delete(nodeName);
  }

  /** A pod bound to a node (from the store); confirms an assumed pod. */
  addPod(pod: Pod): void {
    const nodeName = pod.spec?.nodeName;
    if (!nodeName) return;
    const key = podKey(pod);
    const st = this.podStates.get(key);
    if (st) {
      this.unplace(key, st.nodeName);
    }
    const info = newPodInfo(pod);
    this.place(info, nodeName);
    this.podStates.set(key, { info, nodeName, assumed: false, bindingFinished: false, deadline: 0 });
  }

  updatePod(pod: Pod): void {
    const nodeName = pod.spec?.nodeName;
    if (!nodeName) {
      this.removePod(pod);
      return;
    }
    this.addPod(pod);
  }

  removePod(pod: Pod): void {
    const key = podKey(pod);
    const st = this.podStates.get(key);
    if (!st) return;
    this.unplace(key, st.nodeName);
    this.podStates.delete(key);
  }

  /** Optimistically places a pod before its Binding is written. */
  assumePod(info: PodInfo, nodeName: string): void {
    if (this.podStates.has(info.key))
      throw new Error(`pod ${info.namespace}/${info.name} is in the cache, so can't be assumed`);
    this.place(info, nodeName);
    this.podStates.set(info.key, { info, nodeName, assumed: true, bindingFinished: false, deadline: 0 });
  }

  /** The Binding was written; the assumed pod now waits for its confirming event. */
  finishBinding(key: string, now: number): void {
    const st = this.podStates.get(key);
    if (!st?.assumed) return;
    st.bindingFinished = true;
    st.deadline = this.assumedPodTTLMs > 0 ? now + this.assumedPodTTLMs : 0;
  }

  /** Undoes an assume (binding failed). */
  forgetPod(key: string): void {
    const st = this.podStates.get(key);
    if (!st?.assumed) return;
    this.unplace(key, st.nodeName);
    this.podStates.delete(key);
  }

  isAssumed(key: string): boolean {
    return this.podStates.get(key)?.assumed ?? false;
  }

  podNode(key: string): string | undefined {
    return this.podStates.get(key)?.nodeName;
  }

  cleanupAssumedPods(now: number): string[] {
    const expired: string[] = [];
    for (const [key, st] of this.podStates) {
      if (st.assumed && st.bindingFinished && st.deadline > 0 && st.deadline <= now) expired.push(key);
    }
    for (const key of expired) this.forgetPod(key);
    return expired;
  }

  nodeCount(): number {
    let n = 0;
    for (const ni of this.nodes.values()) if (ni.node) n++;
    return n;
  }

  podCount(): number {
    return this.podStates.size;
  }

  getNodeInfo(name: string): NodeInfo | undefined {
    return this.nodes.get(name);
  }

  // ---- snapshot ----

  /**
   * Brings `s` up to date, copying only nodes changed since its last update. The lists of
   * nodes with (anti-)affinity pods are rebuilt only when a node copied in or out of them
   * holds such pods: a pass over every node per cycle otherwise (each binding dirties a node).
   */
  updateSnapshot(s: Snapshot): void {
    const withAffinity = (n: NodeInfo | undefined) =>
      !!n && (n.podsWithAffinity.length > 0 || n.podsWithRequiredAntiAffinity.length > 0);
    let affinityChanged = false;
    if (s.structure !== this.structure) {
      const oldMap = s.nodeInfoMap;
      s.nodeInfoMap = new Map();
      s.nodeInfoList = [];
      s.index = new Map();
      for (const [name, ni] of this.nodes) {
        if (!ni.node) continue;
        const prev = oldMap.get(name);
        const copy = prev && prev.generation === ni.generation && !this.dirty.has(name) ? prev : ni.clone();
        s.index.set(name, s.nodeInfoList.length);
        s.nodeInfoList.push(copy);
        s.nodeInfoMap.set(name, copy);
      }
      s.namespaceLabels = new Map(this.namespaces);
      s.structure = this.structure;
      affinityChanged = true;
    } else {
      for (const name of this.dirty) {
        const ni = this.nodes.get(name);
        const idx = s.index.get(name);
        if (!ni?.node || idx === undefined) continue;
        const copy = ni.clone();
        if (withAffinity(s.nodeInfoList[idx]) || withAffinity(copy)) affinityChanged = true;
        s.nodeInfoList[idx] = copy;
        s.nodeInfoMap.set(name, copy);
      }
    }
    if (affinityChanged) {
      s.havePodsWithAffinityList = s.nodeInfoList.filter((n) => n.podsWithAffinity.length > 0);
      s.havePodsWithRequiredAntiAffinityList = s.nodeInfoList.filter(
        (n) => n.podsWithRequiredAntiAffinity.length > 0,
      );
    }
    this.dirty.clear();
  }
}
