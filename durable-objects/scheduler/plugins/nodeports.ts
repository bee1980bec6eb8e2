import { type Plugin, SKIP, unschedulable } from "../framework";
import type { HostPort } from "../podinfo";

export const NAME = "NodePorts";
export const ERR_REASON = "node(s) didn't have free ports for the requested pod ports";

const KEY = `PreFilter${NAME}`;

/** Host ports the pod wants must be free on the node (0.0.0.0 clashes with every IP). */
export function nodePorts(): Plugin {
  return {
    name: NAME,
    preFilter(state, pod) {
      if (pod.hostPorts.length === 0) return SKIP;
      state.write(KEY, pod.hostPorts);
      return undefined;
    },
    filter(state, pod, node) {
      const wanted = state.read<HostPort[]>(KEY) ?? pod.hostPorts;
      for (const hp of wanted) {
        if (node.portConflicts(hp.ip, hp.protocol, hp.port)) return unschedulable(ERR_REASON);
      }
      return undefined;
    },
  };
}
