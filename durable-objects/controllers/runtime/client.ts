// The control plane's own API client: requests run in process through the apiserver the
// Worker hands in, so controllers and the scheduler pass the same authorization and
// admission as anyone.
import { StatusError } from "../../../api/errors";
import { resourceKey } from "../../../api/registry";
import { apiVersionOf, type ResourceDef } from "../../../api/resource";
import type { KubeObject } from "../../../api/types";
import type { UserInfo } from "../../../api/user";
import { versionBody } from "../../../api/version";
import type { Apiserver } from "../../apiserver";
import type { Env } from "../../env";
import { pathFor } from "../lib/objects";

// The path builder and error predicates live with the pure controller helpers (tests load
// those without the apiserver app); re-exported here for the callers of this client.
export { isAlreadyExists, isConflict, isNotFound } from "../lib/api-errors";
export { pathFor } from "../lib/objects";

export type WriteObserver = (res: string, obj: KubeObject, deleted: boolean) => void;

/**
 * The user agent a Kubernetes component's client sends, as client-go builds it:
 * `<program>/<version> (<os>/<arch>) kubernetes/<commit, 7 chars>/<client>`, the version and
 * platform being what /version serves. The writes below name no fieldManager, so the
 * apiserver records the part before the first "/" as their manager, as upstream's
 * managedFields show (kube-controller-manager, kube-scheduler); audit logs get the whole.
 */
export function componentUserAgent(program: string, client: string): string {
  const v = versionBody();
  const version = v.gitVersion.split("-")[0];
  return `${program}/${version} (${v.platform}) kubernetes/${v.gitCommit.slice(0, 7)}/${client}`;
}

export class ApiClient {
  constructor(
    private readonly apiserver: Apiserver,
    private readonly env: Env,
    readonly user: UserInfo,
    /** sent as user-agent; see componentUserAgent */
    readonly userAgent: string,
    private readonly observe?: WriteObserver,
  ) {}

  /** The same client under another user agent (one per controller, as upstream's clients). */
  withUserAgent(userAgent: string): ApiClient {
    return new ApiClient(this.apiserver, this.env, this.user, userAgent, this.observe);
  }

  async request(
    method: string,
    path: string,
    body?: unknown,
    contentType = "application/json",
    headers?: Record<string, string>,
  ): Promise<any> {
    const init: RequestInit = {
      method,
      headers: { accept: "application/json", "user-agent": this.userAgent, ...headers },
    };
    if (body !== undefined) {
      init.body = typeof body === "string" ? body : JSON.stringify(body);
      (init.headers as Record<string, string>)["content-type"] = contentType;
    }
    const res = await this.apiserver.serve(this.user, `http://internal${path}`, init, this.env);
    const text = await res.text();
    const json = text ? JSON.parse(text) : undefined;
    if (res.status >= 400) {
      throw StatusError.isStatus(json)
        ? StatusError.fromStatus(json)
        : new StatusError(res.status, "InternalError", text);
    }
    return json;
  }

  private seen(def: ResourceDef, obj: KubeObject, deleted = false): KubeObject {
    if (obj?.metadata && obj.kind === def.kind)
      this.observe?.(resourceKey(def), obj, deleted && !obj.metadata.deletionTimestamp);
    return obj;
  }

  /** `headers`: extra request headers (a pod's flow-trace cause, api/trace.ts) */
  async create(def: ResourceDef, obj: KubeObject, headers?: Record<string, string>): Promise<KubeObject> {
    const body = { apiVersion: apiVersionOf(def), kind: def.kind, ...obj };
    return this.seen(
      def,
      await this.request("POST", pathFor(def, obj.metadata.namespace), body, "application/json", headers),
    );
  }

  async update(def: ResourceDef, obj: KubeObject, sub?: string): Promise<KubeObject> {
    const path = pathFor(def, obj.metadata.namespace, obj.metadata.name, sub);
    return this.seen(def, await this.request("PUT", path, obj));
  }

  async patch(
    def: ResourceDef,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    type = "application/merge-patch+json",
    sub?: string,
  ): Promise<KubeObject> {
    const path = pathFor(def, namespace, name, sub);
    return this.seen(def, await this.request("PATCH", path, patch, type));
  }

  async remove(
    def: ResourceDef,
    namespace: string | undefined,
    name: string,
    opts: Record<string, unknown> = {},
  ): Promise<KubeObject | undefined> {
    const res = await this.request("DELETE", pathFor(def, namespace, name), {
      kind: "DeleteOptions",
      apiVersion: "v1",
      ...opts,
    });
    if (res?.kind === def.kind) this.seen(def, res, true);
    return res;
  }
}
