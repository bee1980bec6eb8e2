import { type Plugin, unresolvable } from "../framework";

export const NAME = "NodeName";
export const ERR_REASON = "node(s) didn't match the requested node name";

/** A pod with spec.nodeName only fits that node. */
export function nodeName(): Plugin {
  return {
    name: NAME,
    filter(_state, pod, node) {
      const want = pod.pod.spec?.nodeName;
      if (!want || want === node.name) return undefined;
      return unresolvable(ERR_REASON);
    },
  };
}
