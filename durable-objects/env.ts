// The Worker's bindings (wrangler.toml [vars], secrets and Durable Object namespaces).
import type { ControllerManager } from "./controllers/manager";
import type { MetricsObject } from "./metrics/metrics-object";
import type { NodeTunnel } from "./node-tunnel/node-tunnel";
import type { SchedulerObject } from "./scheduler/object";
import type { StoreShard } from "./store/shard";

export interface Env {
  STORE: DurableObjectNamespace<StoreShard>;
  CONTROLLERS: DurableObjectNamespace<ControllerManager>;
  SCHEDULER: DurableObjectNamespace<SchedulerObject>;
  /** One per node: holds the node agent's WebSocket for logs, exec, attach and port-forward. */
  NODE_TUNNEL: DurableObjectNamespace<NodeTunnel>;
  /** One per cluster: the nodes' latest resource-usage reports, in memory (metrics.k8s.io). */
  METRICS: DurableObjectNamespace<MetricsObject>;
  EDGEPLANE_CLUSTER: string;
  EDGEPLANE_WATCH_WINDOW_SECONDS?: string;
  /** Resources spread over several store shards: "pods=4,events=4,leases=4" (store/shard-plan.ts). */
  EDGEPLANE_STORE_SHARDS?: string;
  EDGEPLANE_WATCH_WINDOW_EVENTS?: string;
  /** Events expire this many seconds after their last write (--event-ttl; default 3600). */
  EDGEPLANE_EVENT_TTL_SECONDS?: string;
  /** Services: the cluster IP range (--service-cluster-ip-range; default 10.96.0.0/12). */
  EDGEPLANE_SERVICE_CIDR?: string;
  /** Services: the node port range (--service-node-port-range; default 30000-32767). */
  EDGEPLANE_SERVICE_NODE_PORT_RANGE?: string;
  /**
   * The apiserver's address as nodes dial it, host:port (kube-apiserver's --advertise-address and
   * --secure-port): published as the `kubernetes` Service's Endpoints and EndpointSlice.
   * `npm start` sets it to its front door; unset, they are not published.
   */
  EDGEPLANE_APISERVER_ADDRESS?: string;
  /** The cluster DNS domain (kubelet's --cluster-domain; default cluster.local). */
  EDGEPLANE_CLUSTER_DOMAIN?: string;
  /** Pods: the cluster's pod range, cut into one block per node (--cluster-cidr; default 10.244.0.0/16). */
  EDGEPLANE_CLUSTER_CIDR?: string;
  /** Pods: the prefix length of each node's block (--node-cidr-mask-size; default 24). */
  EDGEPLANE_NODE_CIDR_MASK_SIZE?: string;
  /** Pods: how node agents route between nodes, auto|host-gw|vxlan|none (default auto; docs/networking.md). */
  EDGEPLANE_POD_NETWORK_BACKEND?: string;
  /** Node lifecycle: seconds without a lease renewal before a node is NotReady (default 40). */
  EDGEPLANE_NODE_MONITOR_GRACE_SECONDS?: string;
  /** Seconds a pod stays on an unreachable node before eviction (default 300). */
  EDGEPLANE_DEFAULT_TOLERATION_SECONDS?: string;
  /** HorizontalPodAutoscalers: seconds between looks at each (--horizontal-pod-autoscaler-sync-period; default 15). */
  EDGEPLANE_HPA_SYNC_PERIOD_SECONDS?: string;
  /** HorizontalPodAutoscalers: the scale-down stabilization window in seconds (--horizontal-pod-autoscaler-downscale-stabilization; default 300). */
  EDGEPLANE_HPA_DOWNSCALE_STABILIZATION_SECONDS?: string;
  /** "off": no built-in "local-path" StorageClass is created (k3s's --disable local-storage) */
  EDGEPLANE_LOCAL_STORAGE?: string;
  /** Authorization modes in order, comma separated (default "Node,RBAC"). */
  EDGEPLANE_AUTHORIZATION_MODES?: string;
  /** ABAC policy (upstream's JSON-lines file contents, or base64 of them) for the ABAC mode. */
  EDGEPLANE_ABAC_POLICY?: string;
  /** Webhook authorization: SubjectAccessReview endpoint, bearer token, cache TTLs (Go durations), timeout, failure policy. */
  EDGEPLANE_AUTHZ_WEBHOOK_URL?: string;
  EDGEPLANE_AUTHZ_WEBHOOK_TOKEN?: string;
  EDGEPLANE_AUTHZ_WEBHOOK_ALLOW_TTL?: string;
  EDGEPLANE_AUTHZ_WEBHOOK_DENY_TTL?: string;
  EDGEPLANE_AUTHZ_WEBHOOK_TIMEOUT_MS?: string;
  EDGEPLANE_AUTHZ_WEBHOOK_FAILURE_POLICY?: string;
  /** Audit policy (audit.k8s.io/v1 Policy as YAML, JSON or base64); unset = no audit log. */
  EDGEPLANE_AUDIT_POLICY?: string;
  EDGEPLANE_AUDIT_RING_SIZE?: string;
  /** Admission plugins on/off: "Name" or "+Name" enables, "-Name" disables (default: all but SecurityContextDeny). */
  EDGEPLANE_ADMISSION_PLUGINS?: string;
  /**
   * The cluster's root CA bundle (PEM; not a secret): what clients verify the apiserver with
   * (kube-controller-manager's --root-ca-file). When set, every namespace gets the ConfigMap
   * kube-root-ca.crt holding it, pods' projected service account volumes require that map as
   * upstream's do, and token Secrets carry it as ca.crt. `npm start` sets it to its local CA.
   */
  EDGEPLANE_ROOT_CA?: string;
  /**
   * The root CA's private key (PKCS#8 PEM, a secret): with it the CSR signers
   * (kubernetes.io/kube-apiserver-client, -kubelet, kubelet-serving) sign approved
   * CertificateSigningRequests, as kube-controller-manager's --cluster-signing-key-file.
   * `npm start` sets it to its local CA's key.
   */
  EDGEPLANE_CA_KEY?: string;
  /** --cluster-signing-duration in seconds: the longest certificate the signers issue (a year) */
  EDGEPLANE_CLUSTER_SIGNING_DURATION_SECONDS?: string;
  /** Static tokens, one per line as upstream's token file: token,user,uid,"group1,group2" (a secret). */
  EDGEPLANE_TOKENS?: string;
  /** Shared with the local front door, made afresh at each start: lets it relay watches (handlers/relay.ts). */
  EDGEPLANE_RELAY_SECRET?: string;
}
