// A typed, promise-based CRI (runtime.v1) client over a unix socket, built on
// @grpc/grpc-js and @grpc/proto-loader with the proto next to this file.
// Every call has a deadline; failures are CriError with the gRPC status code.

import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import type {
  AttachRequest,
  AuthConfig,
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerStats,
  ContainerStatsFilter,
  ContainerStatusResponse,
  ExecRequest,
  ExecSyncResponse,
  Image,
  ImageFsInfoResponse,
  ImageSpec,
  ImageStatusResponse,
  KeyValue,
  LinuxContainerResources,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxFilter,
  PodSandboxStatusResponse,
  StatusResponse,
  StreamingUrlResponse,
  VersionResponse,
} from "./types";

export const DEFAULT_CRI_ENDPOINT = "unix:///run/edgeplane/containerd.sock";
/** The CRI API version string a kubelet sends in Version. */
export const CRI_API_VERSION = "v1";

export interface CriClientOptions {
  /** `unix:///path/to.sock` (a bare absolute path is accepted too). */
  endpoint?: string;
  /** Deadline of ordinary calls in ms (default 60 s). */
  timeoutMs?: number;
  /** Deadline of PullImage in ms (default 10 min). */
  pullTimeoutMs?: number;
}

export interface CallOptions {
  timeoutMs?: number;
}

/** A failed CRI call: the gRPC status code plus the runtime's own message. */
export class CriError extends Error {
  readonly code: grpc.status;
  readonly codeName: string;
  readonly method: string;
  readonly details: string;

  constructor(method: string, code: grpc.status, details: string, endpoint: string) {
    const codeName = grpc.status[code] ?? String(code);
    super(`CRI ${method} failed: ${codeName}: ${details} (endpoint ${endpoint})`);
    this.name = "CriError";
    this.code = code;
    this.codeName = codeName;
    this.method = method;
    this.details = details;
  }

  get isNotFound(): boolean {
    return this.code === grpc.status.NOT_FOUND;
  }

  get isUnavailable(): boolean {
    return this.code === grpc.status.UNAVAILABLE || this.code === grpc.status.DEADLINE_EXCEEDED;
  }
}

const PROTO_PATH = fileURLToPath(new URL("./api.proto", import.meta.url));

let cachedPackage: grpc.GrpcObject | undefined;
function criPackage(): grpc.GrpcObject {
  if (!cachedPackage) {
    const definition = protoLoader.loadSync(PROTO_PATH, {
      keepCase: true,
      longs: Number,
      enums: String,
      defaults: true,
      oneofs: true,
    });
    cachedPackage = grpc.loadPackageDefinition(definition);
  }
  return cachedPackage;
}

type ServiceCtor = grpc.ServiceClientConstructor;
function serviceCtor(name: "RuntimeService" | "ImageService"): ServiceCtor {
  const runtime = criPackage().runtime as grpc.GrpcObject;
  const v1 = runtime.v1 as grpc.GrpcObject;
  return v1[name] as ServiceCtor;
}

function normalizeEndpoint(endpoint: string): string {
  if (endpoint.startsWith("/")) return `unix://${endpoint}`;
  return endpoint;
}

function encodeEnvs(envs: KeyValue[] | undefined): { key: string; value: Uint8Array }[] | undefined {
  return envs?.map((e) => ({
    key: e.key,
    value: typeof e.value === "string" ? Buffer.from(e.value, "utf8") : e.value,
  }));
}

function encodeContainerConfig(config: ContainerConfig): unknown {
  return { ...config, envs: encodeEnvs(config.envs) };
}

export class CriClient {
  readonly endpoint: string;
  private readonly timeoutMs: number;
  private readonly pullTimeoutMs: number;
  private readonly runtime: grpc.Client;
  private readonly images: grpc.Client;

  constructor(options: CriClientOptions = {}) {
    this.endpoint = normalizeEndpoint(options.endpoint ?? DEFAULT_CRI_ENDPOINT);
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.pullTimeoutMs = options.pullTimeoutMs ?? 600_000;
    const channelOptions: grpc.ClientOptions = {
      "grpc.max_receive_message_length": 32 * 1024 * 1024,
      "grpc.max_send_message_length": 32 * 1024 * 1024,
    };
    const Runtime = serviceCtor("RuntimeService");
    const Images = serviceCtor("ImageService");
    this.runtime = new Runtime(this.endpoint, grpc.credentials.createInsecure(), channelOptions);
    this.images = new Images(this.endpoint, grpc.credentials.createInsecure(), {
      ...channelOptions,
      channelOverride: this.runtime.getChannel(),
    });
  }

  /** Closes the shared channel. The client cannot be used afterwards. */
  close(): void {
    this.runtime.close();
  }

  private call<T>(client: grpc.Client, method: string, request: unknown, timeoutMs: number): Promise<T> {
    const fn = (client as unknown as Record<string, unknown>)[method];
    if (typeof fn !== "function") {
      return Promise.reject(new Error(`CRI client has no method ${method}`));
    }
    return new Promise<T>((resolve, reject) => {
      const deadline = new Date(Date.now() + timeoutMs);
      (fn as (...args: unknown[]) => void).call(
        client,
        request,
        new grpc.Metadata(),
        { deadline },
        (err: grpc.ServiceError | null, response: T) => {
          if (err) {
            const details = err.details || err.message;
            reject(new CriError(method, err.code ?? grpc.status.UNKNOWN, details, this.endpoint));
          } else {
            resolve(response);
          }
        },
      );
    });
  }

  private rt<T>(method: string, request: unknown, opts?: CallOptions): Promise<T> {
    return this.call<T>(this.runtime, method, request, opts?.timeoutMs ?? this.timeoutMs);
  }

  private img<T>(method: string, request: unknown, opts?: CallOptions): Promise<T> {
    return this.call<T>(this.images, method, request, opts?.timeoutMs ?? this.timeoutMs);
  }

  // ---- RuntimeService ---------------------------------------------------

  version(opts?: CallOptions): Promise<VersionResponse> {
    return this.rt("Version", { version: CRI_API_VERSION }, opts);
  }

  status(verbose = false, opts?: CallOptions): Promise<StatusResponse> {
    return this.rt("Status", { verbose }, opts);
  }

  async runPodSandbox(config: PodSandboxConfig, runtimeHandler = "", opts?: CallOptions): Promise<string> {
    const res = await this.rt<{ pod_sandbox_id: string }>(
      "RunPodSandbox",
      { config, runtime_handler: runtimeHandler },
      opts,
    );
    return res.pod_sandbox_id;
  }

  async stopPodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    await this.rt("StopPodSandbox", { pod_sandbox_id: podSandboxId }, opts);
  }

  async removePodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    await this.rt("RemovePodSandbox", { pod_sandbox_id: podSandboxId }, opts);
  }

  podSandboxStatus(
    podSandboxId: string,
    verbose = false,
    opts?: CallOptions,
  ): Promise<PodSandboxStatusResponse> {
    return this.rt("PodSandboxStatus", { pod_sandbox_id: podSandboxId, verbose }, opts);
  }

  async listPodSandbox(filter?: PodSandboxFilter, opts?: CallOptions): Promise<PodSandbox[]> {
    const res = await this.rt<{ items: PodSandbox[] }>("ListPodSandbox", { filter }, opts);
    return res.items;
  }

  async createContainer(
    podSandboxId: string,
    config: ContainerConfig,
    sandboxConfig: PodSandboxConfig,
    opts?: CallOptions,
  ): Promise<string> {
    const res = await this.rt<{ container_id: string }>(
      "CreateContainer",
      { pod_sandbox_id: podSandboxId, config: encodeContainerConfig(config), sandbox_config: sandboxConfig },
      opts,
    );
    return res.container_id;
  }

  async startContainer(containerId: string, opts?: CallOptions): Promise<void> {
    await this.rt("StartContainer", { container_id: containerId }, opts);
  }

  /** Stops a container: SIGTERM (or the image's stop signal), SIGKILL after timeoutSeconds. */
  async stopContainer(containerId: string, timeoutSeconds: number, opts?: CallOptions): Promise<void> {
    const timeoutMs = opts?.timeoutMs ?? Math.max(this.timeoutMs, (timeoutSeconds + 30) * 1000);
    await this.rt("StopContainer", { container_id: containerId, timeout: timeoutSeconds }, { timeoutMs });
  }

  async removeContainer(containerId: string, opts?: CallOptions): Promise<void> {
    await this.rt("RemoveContainer", { container_id: containerId }, opts);
  }

  async listContainers(filter?: ContainerFilter, opts?: CallOptions): Promise<Container[]> {
    const res = await this.rt<{ containers: Container[] }>("ListContainers", { filter }, opts);
    return res.containers;
  }

  /** Each container's CPU and memory use (cumulative CPU, working set), as the kubelet reads them. */
  async listContainerStats(filter?: ContainerStatsFilter, opts?: CallOptions): Promise<ContainerStats[]> {
    const res = await this.rt<{ stats: ContainerStats[] }>("ListContainerStats", { filter }, opts);
    return res.stats;
  }

  containerStatus(
    containerId: string,
    verbose = false,
    opts?: CallOptions,
  ): Promise<ContainerStatusResponse> {
    return this.rt("ContainerStatus", { container_id: containerId, verbose }, opts);
  }

  async updateContainerResources(
    containerId: string,
    linux: LinuxContainerResources,
    annotations?: Record<string, string>,
    opts?: CallOptions,
  ): Promise<void> {
    await this.rt("UpdateContainerResources", { container_id: containerId, linux, annotations }, opts);
  }

  /** Runs a command in a container and collects its output; timeoutSeconds 0 means no runtime-side limit. */
  execSync(
    containerId: string,
    cmd: string[],
    timeoutSeconds = 0,
    opts?: CallOptions,
  ): Promise<ExecSyncResponse> {
    const timeoutMs = opts?.timeoutMs ?? (timeoutSeconds > 0 ? (timeoutSeconds + 10) * 1000 : this.timeoutMs);
    return this.rt("ExecSync", { container_id: containerId, cmd, timeout: timeoutSeconds }, { timeoutMs });
  }

  exec(request: ExecRequest, opts?: CallOptions): Promise<StreamingUrlResponse> {
    return this.rt("Exec", request, opts);
  }

  attach(request: AttachRequest, opts?: CallOptions): Promise<StreamingUrlResponse> {
    return this.rt("Attach", request, opts);
  }

  portForward(podSandboxId: string, ports: number[], opts?: CallOptions): Promise<StreamingUrlResponse> {
    return this.rt("PortForward", { pod_sandbox_id: podSandboxId, port: ports }, opts);
  }

  // ---- ImageService -----------------------------------------------------

  async listImages(filter?: ImageSpec, opts?: CallOptions): Promise<Image[]> {
    const res = await this.img<{ images: Image[] }>(
      "ListImages",
      { filter: filter ? { image: filter } : undefined },
      opts,
    );
    return res.images;
  }

  imageStatus(image: string | ImageSpec, verbose = false, opts?: CallOptions): Promise<ImageStatusResponse> {
    return this.img("ImageStatus", { image: toSpec(image), verbose }, opts);
  }

  /** Pulls an image and returns its image ref (the config digest for containerd). */
  async pullImage(
    image: string | ImageSpec,
    auth?: AuthConfig,
    sandboxConfig?: PodSandboxConfig,
    opts?: CallOptions,
  ): Promise<string> {
    const res = await this.call<{ image_ref: string }>(
      this.images,
      "PullImage",
      { image: toSpec(image), auth, sandbox_config: sandboxConfig },
      opts?.timeoutMs ?? this.pullTimeoutMs,
    );
    return res.image_ref;
  }

  async removeImage(image: string | ImageSpec, opts?: CallOptions): Promise<void> {
    await this.img("RemoveImage", { image: toSpec(image) }, opts);
  }

  imageFsInfo(opts?: CallOptions): Promise<ImageFsInfoResponse> {
    return this.img("ImageFsInfo", {}, opts);
  }

  // ---- helpers ----------------------------------------------------------

  /**
   * Polls Status until RuntimeReady and NetworkReady are both true (the
   * socket answers before the CRI plugin is ready). Rejects with the last
   * conditions or error once timeoutMs has passed. `types` narrows the wait
   * (a node agent waits for RuntimeReady alone: NetworkReady follows the CNI
   * config it writes itself).
   */
  async waitReady(
    timeoutMs = 30_000,
    intervalMs = 200,
    types: string[] = ["RuntimeReady", "NetworkReady"],
  ): Promise<StatusResponse> {
    const until = Date.now() + timeoutMs;
    let last = "no answer yet";
    for (;;) {
      const left = until - Date.now();
      try {
        const res = await this.status(false, { timeoutMs: Math.max(500, Math.min(5_000, left)) });
        const notReady = notReadyConditions(res, types);
        if (notReady.length === 0) return res;
        last = notReady.join("; ");
      } catch (err) {
        last = err instanceof Error ? err.message : String(err);
      }
      if (Date.now() + intervalMs > until) {
        throw new Error(`CRI runtime at ${this.endpoint} not ready after ${timeoutMs} ms: ${last}`);
      }
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }
}

/** The RuntimeReady/NetworkReady conditions that are not true, as readable text. */
export function notReadyConditions(
  res: StatusResponse,
  types: string[] = ["RuntimeReady", "NetworkReady"],
): string[] {
  const conditions = res.status?.conditions ?? [];
  const out: string[] = [];
  for (const type of types) {
    const c = conditions.find((x) => x.type === type);
    if (!c) out.push(`${type} missing`);
    else if (!c.status) out.push(`${type}=false (${c.reason}: ${c.message})`);
  }
  return out;
}

function toSpec(image: string | ImageSpec): ImageSpec {
  return typeof image === "string" ? { image } : image;
}
