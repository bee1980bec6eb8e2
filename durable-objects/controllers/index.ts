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
import { createNodeIpamController } from "./node-ipam";
import { createNodeLifecycleController } from "./node-lifecycle";
import { persistentVolumeController } from "./persistentvolume";
import { createPodGC } from "./pod-gc";
import { replicaSetController, replicationControllerController } from "./replicaset";
import { createRootCAPublisher } from "./root-ca-publisher";
import type { Controller } from "./runtime/controller";
import { serviceLBController } from "./service-lb";
import { serviceAccountController } from "./serviceaccount";
import { statefulSetController } from "./statefulset";
import { createTokensController, type TokensOptions } from "./tokens";
import { volumeProtectionController } from "./volume-protection";

/** Knobs upstream sets with kube-controller-manager flags (defaults as upstream). */
export interface ControllerConfig {
  /** --node-monitor-grace-period (40 s); EDGEPLANE_NODE_MONITOR_GRACE_SECONDS */
  nodeMonitorGraceSeconds?: number;
  /** DefaultTolerationSeconds admission's not-ready/unreachable tolerations (300 s) */
  defaultTolerationSeconds?: number;
  /** --terminated-pod-gc-threshold (12500) */
  terminatedPodGCThreshold?: number;
  /** --root-ca-file's bundle (PEM); EDGEPLANE_ROOT_CA. Unset: no kube-root-ca.crt publisher */
  rootCA?: string;
  /** --cluster-cidr and --node-cidr-mask-size; EDGEPLANE_CLUSTER_CIDR, EDGEPLANE_NODE_CIDR_MASK_SIZE */
  clusterCIDR?: string;
  nodeCIDRMaskSize?: string;
  /** signs legacy tokens (the service account key); unset: no tokens controller */
  legacyToken?: TokensOptions["generate"];
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
    serviceLBController,
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
    createNodeIpamController({ clusterCIDR: config.clusterCIDR, nodeCIDRMaskSize: config.nodeCIDRMaskSize }),
    ...(config.rootCA ? [createRootCAPublisher(config.rootCA)] : []),
    ...(config.legacyToken
      ? [createTokensController({ rootCA: config.rootCA, generate: config.legacyToken })]
      : []),
  ];
}

export const CONTROLLERS: Controller[] = buildControllers();
