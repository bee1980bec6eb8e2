// Every controller the manager runs, in one list.

import { crdFinalizer } from "./crd-finalizer";
import { crdNaming } from "./crd-naming";
import { cronJobController } from "./cronjob";
import { daemonSetController } from "./daemonset";
import { deploymentController } from "./deployment";
import { disruptionController } from "./disruption";
import { endpointsController } from "./endpoints";
import { endpointSliceController } from "./endpointslices";
import { ephemeralVolumeController } from "./ephemeral-volume";
import { garbageCollector } from "./garbage-collector";
import { horizontalPodAutoscalerController } from "./horizontal";
import { jobController } from "./job";
import { localPathProvisioner } from "./local-path";
import { namespaceController } from "./namespace";
import { createNodeLifecycleController } from "./node-lifecycle";
import { persistentVolumeController } from "./persistentvolume";
import { createPodGC } from "./pod-gc";
import { replicaSetController, replicationControllerController } from "./replicaset";
import type { Controller } from "./runtime/controller";
import { serviceAccountController } from "./serviceaccount";
import { statefulSetController } from "./statefulset";
import { volumeProtectionController } from "./volume-protection";

/** Knobs upstream sets with kube-controller-manager flags (defaults as upstream). */
export interface ControllerConfig {
  /** --node-monitor-grace-period (40 s); EDGEPLANE_NODE_MONITOR_GRACE_SECONDS */
  nodeMonitorGraceSeconds?: number;
  /** DefaultTolerationSeconds admission's not-ready/unreachable tolerations (300 s) */
  defaultTolerationSeconds?: number;
  /** --terminated-pod-gc-threshold (12500) */
  terminatedPodGCThreshold?: number;
}

/** The controller list for a configuration (e.g. read from the Worker env by the manager). */
export function buildControllers(config: ControllerConfig = {}): Controller[] {
  const grace = config.nodeMonitorGraceSeconds;
  return [
    replicaSetController,
    replicationControllerController,
    deploymentController,
    daemonSetController,
    statefulSetController,
    disruptionController,
    jobController,
    cronJobController,
    garbageCollector,
    namespaceController,
    serviceAccountController,
    endpointsController,
    endpointSliceController,
    persistentVolumeController,
    volumeProtectionController,
    localPathProvisioner,
    ephemeralVolumeController,
    horizontalPodAutoscalerController,
    crdFinalizer,
    crdNaming,
    createNodeLifecycleController({
      gracePeriodMs: grace && grace > 0 ? grace * 1000 : undefined,
      defaultTolerationSeconds: config.defaultTolerationSeconds,
    }),
    createPodGC({ terminatedThreshold: config.terminatedPodGCThreshold }),
  ];
}

export const CONTROLLERS: Controller[] = buildControllers();
