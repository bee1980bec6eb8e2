// NamespaceLifecycle: nothing is created in a namespace that does not exist or is being
// terminated, and the system namespaces cannot be deleted.
import { forbidden, notFound } from "../../api/errors";
import { lookupGVR } from "../../api/registry";
import { Store } from "../../durable-objects/store/client";
import type { AdmissionPlugin } from "./index";
import { admissionName } from "./util";

const IMMORTAL = new Set(["default", "kube-system", "kube-public"]);

/** Recently seen active namespaces, per isolate: a create need not re-read its namespace each time. */
const active = new Map<string, number>();
const TTL_MS = 1000;

export const namespaceLifecycle: AdmissionPlugin = {
  name: "NamespaceLifecycle",
  async validate(a) {
    const { w, operation, object, old } = a;
    const nsDef = lookupGVR("", "v1", "namespaces")!;
    if (operation === "DELETE" && w.def === nsDef && old && IMMORTAL.has(old.metadata.name ?? "")) {
      throw forbidden(`namespaces "${old.metadata.name}" is forbidden: this namespace may not be deleted`);
    }
    if (operation !== "CREATE" || !w.def.namespaced || !object) return;
    // the request's namespace: a subresource's object (an Eviction, a TokenRequest) may name none
    const ns = w.info.namespace || object.metadata?.namespace || "";
    const key = `${w.c.env.EDGEPLANE_CLUSTER}/${ns}`;
    const seen = active.get(key);
    if (seen && Date.now() - seen < TTL_MS) return;
    const nsObj = await new Store(w.c.env, nsDef).find("", ns);
    if (!nsObj) throw notFound(nsDef, ns);
    if (nsObj.status?.phase === "Terminating" || nsObj.metadata.deletionTimestamp) {
      active.delete(key);
      throw forbidden(
        `${w.def.group ? `${w.def.resource}.${w.def.group}` : w.def.resource} "${admissionName(a)}" is forbidden: unable to create new content in namespace ${ns} because it is being terminated`,
        {
          name: admissionName(a),
          group: w.def.group || undefined,
          kind: w.def.resource,
          causes: [
            {
              type: "NamespaceTerminating",
              message: `namespace ${ns} is being terminated`,
              field: "metadata.namespace",
            },
          ],
        },
      );
    }
    active.set(key, Date.now());
  },
};
