// An in-memory ObjectSource for the authn unit tests.
import { alreadyExists } from "../../../api/errors";
import type { KubeObject } from "../../../api/types";
import type { AuthnEnv, ObjectResource, ObjectSource } from "../../../workers/authn/types";

export class FakeObjects implements ObjectSource {
  readonly items = new Map<string, KubeObject>();
  creates = 0;

  private key(resource: string, ns: string, name: string) {
    return `${resource}/${ns}/${name}`;
  }

  async get(resource: ObjectResource, namespace: string, name: string) {
    const o = this.items.get(this.key(resource, namespace, name));
    return o ? structuredClone(o) : undefined;
  }

  async create(resource: ObjectResource, obj: KubeObject) {
    const k = this.key(resource, obj.metadata.namespace ?? "", obj.metadata.name ?? "");
    if (this.items.has(k)) throw alreadyExists({ group: "", resource }, obj.metadata.name ?? "");
    this.creates++;
    const o = structuredClone(obj);
    o.metadata.uid ??= crypto.randomUUID();
    this.items.set(k, o);
    return structuredClone(o);
  }

  /** Adds an object (uid made up unless given); returns it. */
  put(resource: ObjectResource, obj: Partial<KubeObject> & { metadata: KubeObject["metadata"] }): KubeObject {
    const o = structuredClone(obj) as KubeObject;
    o.metadata.uid ??= crypto.randomUUID();
    this.items.set(this.key(resource, o.metadata.namespace ?? "", o.metadata.name ?? ""), o);
    return o;
  }

  remove(resource: ObjectResource, namespace: string, name: string) {
    this.items.delete(this.key(resource, namespace, name));
  }
}

export function testEnv(vars: Partial<AuthnEnv> = {}): AuthnEnv {
  return {
    EDGEPLANE_CLUSTER: `test-${crypto.randomUUID()}`,
    EDGEPLANE_TOKEN_CACHE_TTL_SECONDS: "0",
    ...vars,
  } as AuthnEnv;
}

export const b64 = (s: string) => btoa(s);
