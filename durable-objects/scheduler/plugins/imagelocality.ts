import { normalizeImageName } from "../cache";
import type { Plugin } from "../framework";
import { MAX_NODE_SCORE } from "../framework";
import type { NodeInfo } from "../nodeinfo";

export const NAME = "ImageLocality";

const MB = 1024 * 1024;
const MIN_THRESHOLD = 23 * MB;
const MAX_CONTAINER_THRESHOLD = 1000 * MB;

/** Image size weighted by how widely the image is already spread over the cluster. */
function sumImageScores(node: NodeInfo, images: string[], totalNodes: number): number {
  let sum = 0;
  for (const img of images) {
    const st = node.imageStates.get(img);
    if (st) sum += Math.trunc(st.size * (st.numNodes / totalNodes));
  }
  return sum;
}

export function imageScore(sum: number, numContainers: number): number {
  const max = MAX_CONTAINER_THRESHOLD * numContainers;
  const s = Math.min(Math.max(sum, MIN_THRESHOLD), max);
  return Math.trunc((MAX_NODE_SCORE * (s - MIN_THRESHOLD)) / (max - MIN_THRESHOLD));
}

const KEY = `PreScore${NAME}`;

/** Favours nodes that already hold the pod's container images. */
export function imageLocality(): Plugin {
  return {
    name: NAME,
    preScore(state, pod) {
      const spec = pod.pod.spec ?? {};
      const images: string[] = [];
      for (const c of spec.initContainers ?? []) images.push(normalizeImageName(c?.image ?? ""));
      for (const c of spec.containers ?? []) images.push(normalizeImageName(c?.image ?? ""));
      state.write(KEY, images);
      return undefined;
    },
    score(state, _pod, node) {
      if (node.imageStates.size === 0) return 0;
      const images = state.read<string[]>(KEY) ?? [];
      if (images.length === 0) return 0;
      return imageScore(sumImageScores(node, images, state.snapshot.numNodes()), images.length);
    },
  };
}
