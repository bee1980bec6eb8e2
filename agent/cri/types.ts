// TypeScript shapes of the CRI runtime.v1 messages edgelet uses (see
// api.proto). Field names are the proto field names (snake_case), as
// @grpc/proto-loader produces them with keepCase. Conventions of decoding:
// enums arrive as their names, int64/uint64 as JS numbers (nanosecond
// timestamps lose sub-microsecond precision, which nothing here needs),
// bytes as Buffer, and absent proto3 scalars as their zero value.
// Request shapes mark everything optional that the runtime may default.

export type Labels = Record<string, string>;

// ---- enums ------------------------------------------------------------------

export type Protocol = "TCP" | "UDP" | "SCTP";
export type MountPropagation =
  | "PROPAGATION_PRIVATE"
  | "PROPAGATION_HOST_TO_CONTAINER"
  | "PROPAGATION_BIDIRECTIONAL";
export type NamespaceMode = "POD" | "CONTAINER" | "NODE" | "TARGET";
export type SeccompProfileType = "RuntimeDefault" | "Unconfined" | "Localhost";
export type PodSandboxState = "SANDBOX_READY" | "SANDBOX_NOTREADY";
export type ContainerState =
  | "CONTAINER_CREATED"
  | "CONTAINER_RUNNING"
  | "CONTAINER_EXITED"
  | "CONTAINER_UNKNOWN";

// ---- shared -----------------------------------------------------------------

export interface Int64Value {
  value: number;
}

/** An environment variable. `value` is bytes on the wire: strings are UTF-8 encoded by the client. */
export interface KeyValue {
  key: string;
  value: string | Uint8Array;
}

export interface ImageSpec {
  image: string;
  annotations?: Labels;
  user_specified_image?: string;
  runtime_handler?: string;
}

export interface DNSConfig {
  servers?: string[];
  searches?: string[];
  options?: string[];
}

export interface PortMapping {
  protocol?: Protocol;
  container_port: number;
  host_port?: number;
  host_ip?: string;
}

export interface Mount {
  container_path: string;
  host_path: string;
  readonly?: boolean;
  selinux_relabel?: boolean;
  propagation?: MountPropagation;
}

export interface NamespaceOption {
  network?: NamespaceMode;
  pid?: NamespaceMode;
  ipc?: NamespaceMode;
  target_id?: string;
}

export interface SecurityProfile {
  profile_type: SeccompProfileType;
  localhost_ref?: string;
}

export interface Capability {
  add_capabilities?: string[];
  drop_capabilities?: string[];
  add_ambient_capabilities?: string[];
}

export interface LinuxContainerResources {
  cpu_period?: number;
  cpu_quota?: number;
  cpu_shares?: number;
  memory_limit_in_bytes?: number;
  oom_score_adj?: number;
  cpuset_cpus?: string;
  cpuset_mems?: string;
  unified?: Labels;
  memory_swap_limit_in_bytes?: number;
}

// ---- version and status -----------------------------------------------------

export interface VersionResponse {
  version: string;
  runtime_name: string;
  runtime_version: string;
  runtime_api_version: string;
}

export interface RuntimeCondition {
  type: string;
  status: boolean;
  reason: string;
  message: string;
}

export interface StatusResponse {
  status: { conditions: RuntimeCondition[] } | null;
  info: Labels;
}

// ---- pod sandboxes ----------------------------------------------------------

export interface LinuxSandboxSecurityContext {
  namespace_options?: NamespaceOption;
  run_as_user?: Int64Value;
  run_as_group?: Int64Value;
  readonly_rootfs?: boolean;
  supplemental_groups?: number[];
  privileged?: boolean;
  seccomp?: SecurityProfile;
  apparmor?: SecurityProfile;
}

export interface LinuxPodSandboxConfig {
  cgroup_parent?: string;
  security_context?: LinuxSandboxSecurityContext;
  sysctls?: Labels;
  overhead?: LinuxContainerResources;
  resources?: LinuxContainerResources;
}

export interface PodSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt?: number;
}

export interface PodSandboxConfig {
  metadata: PodSandboxMetadata;
  hostname?: string;
  log_directory?: string;
  dns_config?: DNSConfig;
  port_mappings?: PortMapping[];
  labels?: Labels;
  annotations?: Labels;
  linux?: LinuxPodSandboxConfig;
}

export interface PodSandboxNetworkStatus {
  ip: string;
  additional_ips: { ip: string }[];
}

export interface PodSandboxStatus {
  id: string;
  metadata: Required<PodSandboxMetadata> | null;
  state: PodSandboxState;
  created_at: number;
  network: PodSandboxNetworkStatus | null;
  linux: { namespaces: { options: NamespaceOption | null } | null } | null;
  labels: Labels;
  annotations: Labels;
  runtime_handler: string;
}

export interface PodSandboxStatusResponse {
  status: PodSandboxStatus | null;
  info: Labels;
  containers_statuses: ContainerStatus[];
  timestamp: number;
}

export interface PodSandboxFilter {
  id?: string;
  state?: { state: PodSandboxState };
  label_selector?: Labels;
}

export interface PodSandbox {
  id: string;
  metadata: Required<PodSandboxMetadata> | null;
  state: PodSandboxState;
  created_at: number;
  labels: Labels;
  annotations: Labels;
  runtime_handler: string;
}

// ---- containers -------------------------------------------------------------

export interface LinuxContainerSecurityContext {
  capabilities?: Capability;
  privileged?: boolean;
  namespace_options?: NamespaceOption;
  run_as_user?: Int64Value;
  run_as_group?: Int64Value;
  run_as_username?: string;
  readonly_rootfs?: boolean;
  supplemental_groups?: number[];
  no_new_privs?: boolean;
  masked_paths?: string[];
  readonly_paths?: string[];
  seccomp?: SecurityProfile;
  apparmor?: SecurityProfile;
}

export interface LinuxContainerConfig {
  resources?: LinuxContainerResources;
  security_context?: LinuxContainerSecurityContext;
}

export interface ContainerMetadata {
  name: string;
  attempt?: number;
}

export interface Device {
  container_path: string;
  host_path: string;
  permissions: string;
}

export interface ContainerConfig {
  metadata: ContainerMetadata;
  image: ImageSpec;
  command?: string[];
  args?: string[];
  working_dir?: string;
  envs?: KeyValue[];
  mounts?: Mount[];
  devices?: Device[];
  labels?: Labels;
  annotations?: Labels;
  log_path?: string;
  stdin?: boolean;
  stdin_once?: boolean;
  tty?: boolean;
  linux?: LinuxContainerConfig;
}

export interface ContainerFilter {
  id?: string;
  state?: { state: ContainerState };
  pod_sandbox_id?: string;
  label_selector?: Labels;
}

export interface Container {
  id: string;
  pod_sandbox_id: string;
  metadata: Required<ContainerMetadata> | null;
  image: ImageSpec | null;
  image_ref: string;
  state: ContainerState;
  created_at: number;
  labels: Labels;
  annotations: Labels;
  image_id: string;
}

export interface ContainerStatus {
  id: string;
  metadata: Required<ContainerMetadata> | null;
  state: ContainerState;
  created_at: number;
  started_at: number;
  finished_at: number;
  exit_code: number;
  image: ImageSpec | null;
  image_ref: string;
  reason: string;
  message: string;
  labels: Labels;
  annotations: Labels;
  mounts: Mount[];
  log_path: string;
  resources: { linux: LinuxContainerResources | null } | null;
  image_id: string;
}

export interface ContainerStatusResponse {
  status: ContainerStatus | null;
  info: Labels;
}

// ---- exec, attach, port-forward -------------------------------------------

export interface ExecSyncResponse {
  stdout: Buffer;
  stderr: Buffer;
  exit_code: number;
}

export interface ExecRequest {
  container_id: string;
  cmd: string[];
  tty?: boolean;
  stdin?: boolean;
  stdout?: boolean;
  stderr?: boolean;
}

export interface AttachRequest {
  container_id: string;
  stdin?: boolean;
  tty?: boolean;
  stdout?: boolean;
  stderr?: boolean;
}

/** Exec, Attach and PortForward answer with a streaming-server URL. */
export interface StreamingUrlResponse {
  url: string;
}

// ---- images -----------------------------------------------------------------

export interface Image {
  id: string;
  repo_tags: string[];
  repo_digests: string[];
  size: number;
  uid: Int64Value | null;
  username: string;
  spec: ImageSpec | null;
  pinned: boolean;
}

export interface ImageStatusResponse {
  /** null when the image is not present on the node. */
  image: Image | null;
  info: Labels;
}

/** Registry credentials. server_address must be empty or `http(s)://host[:port]` for containerd 1.6. */
export interface AuthConfig {
  username?: string;
  password?: string;
  auth?: string;
  server_address?: string;
  identity_token?: string;
  registry_token?: string;
}

export interface FilesystemUsage {
  timestamp: number;
  fs_id: { mountpoint: string } | null;
  used_bytes: { value: number } | null;
  inodes_used: { value: number } | null;
}

export interface ImageFsInfoResponse {
  image_filesystems: FilesystemUsage[];
  container_filesystems: FilesystemUsage[];
}

export interface ContainerStatsFilter {
  id?: string;
  pod_sandbox_id?: string;
  label_selector?: Labels;
}

export interface ContainerStats {
  attributes: {
    id: string;
    metadata: Required<ContainerMetadata> | null;
    labels: Labels;
    annotations: Labels;
  } | null;
  /** timestamps in ns since the epoch; cumulative CPU in core-nanoseconds */
  cpu: {
    timestamp: number;
    usage_core_nano_seconds: { value: number } | null;
    usage_nano_cores: { value: number } | null;
  } | null;
  memory: {
    timestamp: number;
    working_set_bytes: { value: number } | null;
    usage_bytes: { value: number } | null;
  } | null;
}
