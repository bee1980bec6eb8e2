// The objects authentication reads, through the store shards (no admission: these are the
// control plane's own reads and its own two writes, the signing key and bootstrap tokens).
import { lookupGVR } from "../../api/registry";
import type { KubeObject } from "../../api/types";
import type { Env } from "../../durable-objects/env";
import { Store } from "../../durable-objects/store/client";
import type { ObjectResource, ObjectSource } from "./types";

export function storeObjects(env: Env): ObjectSource {
  const store = (resource: ObjectResource) => {
    const def = lookupGVR("", "v1", resource);
    if (!def) throw new Error(`no resource ${resource}`);
    return { def, store: new Store(env, def) };
  };
  return {
    get: (resource, namespace, name) => store(resource).store.find(namespace, name),
    async create(resource, obj) {
      const { def, store: s } = store(resource);
      const o: KubeObject = structuredClone(obj);
      def.strategy.defaults?.(o);
      def.strategy.prepareForCreate?.(o);
      const { body } = await s.create(o);
      return JSON.parse(body);
    },
  };
}
