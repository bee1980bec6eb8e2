// The in-tree plugins and the registry the default profile is built from.
import { type Plugin, Registry } from "../framework";
import { nodeResourcesBalancedAllocation } from "./balancedallocation";
import { defaultPreemption } from "./defaultpreemption";
import { imageLocality } from "./imagelocality";
import { interPodAffinity } from "./interpodaffinity";
import { nodeAffinity } from "./nodeaffinity";
import { nodeName } from "./nodename";
import { nodePorts } from "./nodeports";
import { nodeResourcesFit } from "./noderesourcesfit";
import { nodeUnschedulable } from "./nodeunschedulable";
import { type PodTopologySpreadArgs, podTopologySpread } from "./podtopologyspread";
import { taintToleration } from "./tainttoleration";
import { volumeBinding } from "./volumebinding";

/** Queue ordering lives in queue.ts; this entry exists so profiles can name it. */
const prioritySort = (): Plugin => ({ name: "PrioritySort" });
/** Binding is written by the caller (see events.ts bindingFor); this names the extension point. */
const defaultBinder = (): Plugin => ({ name: "DefaultBinder" });

export function defaultRegistry(): Registry {
  const r = new Registry();
  r.register("PrioritySort", prioritySort);
  r.register("NodeUnschedulable", nodeUnschedulable);
  r.register("NodeName", nodeName);
  r.register("TaintToleration", taintToleration);
  r.register("NodeAffinity", nodeAffinity);
  r.register("NodePorts", nodePorts);
  r.register("NodeResourcesFit", nodeResourcesFit);
  r.register("VolumeBinding", volumeBinding);
  r.register("PodTopologySpread", (args) => podTopologySpread(args as PodTopologySpreadArgs));
  r.register("InterPodAffinity", interPodAffinity);
  r.register("DefaultPreemption", (args) => defaultPreemption(args as { random?: () => number }));
  r.register("NodeResourcesBalancedAllocation", nodeResourcesBalancedAllocation);
  r.register("ImageLocality", imageLocality);
  r.register("DefaultBinder", defaultBinder);
  return r;
}

export {
  defaultPreemption,
  imageLocality,
  interPodAffinity,
  nodeAffinity,
  nodeName,
  nodePorts,
  nodeResourcesBalancedAllocation,
  nodeResourcesFit,
  nodeUnschedulable,
  podTopologySpread,
  taintToleration,
  volumeBinding,
};
