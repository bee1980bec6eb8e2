// Every controller the manager runs, in one list.

import { apiServiceRegistration } from "./apiservice/autoregister";
import { createAvailabilityController, type NodeHttp } from "./apiservice/availability";
import { csrApprover } from "./certificates/approver";
import { createCertificateSigner, type SignerOptions } from "./certificates/signer";
import { crdFinalizer } from "./crd/finalizer";
import { crdNaming } from "./crd/naming";
import { cronJobController } from "./cronjob/controller";
import { daemonSetController } from "./daemonset/controller";
import { deploymentController } from "./deployment/controller";
import { disruptionController } from "./disruption/controller";
import { garbageCollector } from "./gc/garbage-collector";
import { createPodGC } from "./gc/pod-gc";
import { jobController } from "./job/controller";
import { namespaceController } from "./namespace/controller";
import { createNodeIpamController } from "./node/ipam";
import { createNodeLifecycleController } from "./node/lifecycle";
import { createHorizontalPodAutoscalerController } from "./podautoscaler/horizontal";
import { replicaSetController, replicationControllerController } from "./replicaset/controller";
import type { Controller } from "./runtime/controller";
import { endpointsController } from "./service/endpoints";
import { endpointSliceController } from "./service/endpointslices";
import { serviceLBController } from "./service/load-balancer";
import { serviceAccountController } from "./serviceaccount/controller";
import { createRootCAPublisher } from "./serviceaccount/root-ca-publisher";
import { createTokensController, type TokensOptions } from "./serviceaccount/tokens";
import { statefulSetController } from "./statefulset/controller";
import { ephemeralVolumeController } from "./volume/ephemeral";
import { localPathProvisioner } from "./volume/local-path-provisioner";
import { persistentVolumeController } from "./volume/persistentvolume-binder";
import { volumeProtectionController } from "./volume/protection";

/** Knobs upstream sets with kube-controller-manager flags (defaults as upstream). */
export interface ControllerConfig {
  /** --node-monitor-grace-period (40 s); EDGEPLANE_NODE_MONITOR_GRACE_SECONDS */
  nodeMonitorGraceSeconds?: number;
  /** --horizontal-pod-autoscaler-sync-period (15 s); EDGEPLANE_HPA_SYNC_PERIOD_SECONDS */
  hpaSyncPeriodSeconds?: number;
  /** --horizontal-pod-autoscaler-downscale-stabilization (300 s); EDGEPLANE_HPA_DOWNSCALE_STABILIZATION_SECONDS */
  hpaDownscaleStabilizationSeconds?: number;
  /** DefaultTolerationSeconds admission's not-ready/unreachable tolerations (300 s) */
  defaultTolerationSeconds?: number;
  /** --terminated-pod-gc-threshold (12500) */
  terminatedPodGCThreshold?: number;
  /** --root-ca-file's bundle (PEM); EDGEPLANE_ROOT_CA. Unset: no kube-root-ca.crt publisher */
  rootCA?: string;
  /** --cluster-cidr and --node-cidr-mask-size; EDGEPLANE_CLUSTER_CIDR, EDGEPLANE_NODE_CIDR_MASK_SIZE */
  clusterCIDR?: string;
  nodeCIDRMaskSize?: string;
  /** the cluster CA the CSR signers sign with (EDGEPLANE_ROOT_CA, EDGEPLANE_CA_KEY); unset: no signers */
  certificateSigner?: SignerOptions;
  /** signs legacy tokens (the service account key); unset: no tokens controller */
  legacyToken?: TokensOptions["generate"];
  /** HTTP requests from a node through its tunnel (the APIServices' discovery checks) */
  nodeHttp?: NodeHttp;
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
    createHorizontalPodAutoscalerController({
      syncPeriodMs: config.hpaSyncPeriodSeconds ? config.hpaSyncPeriodSeconds * 1000 : undefined,
      downscaleStabilizationMs:
        config.hpaDownscaleStabilizationSeconds !== undefined && config.hpaDownscaleStabilizationSeconds >= 0
          ? config.hpaDownscaleStabilizationSeconds * 1000
          : undefined,
    }),
    crdFinalizer,
    crdNaming,
    apiServiceRegistration,
    createAvailabilityController(config.nodeHttp),
    createNodeLifecycleController({
      gracePeriodMs: grace && grace > 0 ? grace * 1000 : undefined,
      defaultTolerationSeconds: config.defaultTolerationSeconds,
    }),
    createPodGC({ terminatedThreshold: config.terminatedPodGCThreshold }),
    createNodeIpamController({ clusterCIDR: config.clusterCIDR, nodeCIDRMaskSize: config.nodeCIDRMaskSize }),
    ...(config.rootCA ? [createRootCAPublisher(config.rootCA)] : []),
    csrApprover,
    ...(config.certificateSigner ? [createCertificateSigner(config.certificateSigner)] : []),
    ...(config.legacyToken
      ? [createTokensController({ rootCA: config.rootCA, generate: config.legacyToken })]
      : []),
  ];
}

export const CONTROLLERS: Controller[] = buildControllers();
