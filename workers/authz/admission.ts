// The admission side of authorization, as one plugin for workers/admission/index.ts: RBAC
// escalation checks on role and binding writes, and NodeRestriction for kubelets.
import type { AdmissionPlugin } from "../admission/index";
import { assertNodeMayRegister } from "../authn/node-credentials";
import { checkBindingEscalation, checkRoleEscalation } from "./escalation";
import { nodeRestriction } from "./node-restriction";
import { invalidateRbacCache } from "./rbac";

const RBAC_GROUP = "rbac.authorization.k8s.io";

export const authzAdmission: AdmissionPlugin = {
  name: "NodeRestriction+RBACEscalation",
  async validate({ w, operation, object, old }) {
    const user = w.c.get("user");
    const env = w.c.env;
    if (w.def.group === RBAC_GROUP) {
      if (object && (operation === "CREATE" || operation === "UPDATE")) {
        if (w.def.resource === "roles" || w.def.resource === "clusterroles")
          await checkRoleEscalation(user, object, env, old);
        else await checkBindingEscalation(user, object, env, old);
      }
      // the write follows; the handler should call invalidateRbacCache() again once it is stored
      invalidateRbacCache();
    }
    // NodeRestriction handles creates, updates and deletes, as upstream's: a CONNECT (exec,
    // attach, port-forward) is the Node authorizer's alone
    if (operation === "CONNECT") return;
    if (operation === "CREATE" && w.def.group === "" && w.def.resource === "nodes" && !w.info.subresource)
      await assertNodeMayRegister(env, user);
    await nodeRestriction(user, operation, w.def.resource, w.info.subresource, object, old, {
      apiGroup: w.def.group,
      name: w.info.name,
      namespace: w.def.namespaced ? w.info.namespace : "",
      env,
    });
  },
};
