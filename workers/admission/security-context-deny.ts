// SecurityContextDeny (upstream plugin/pkg/admission/securitycontext/scdeny, off unless enabled
// through EDGEPLANE_ADMISSION_PLUGINS): pods may not choose their SELinux context or the user
// and groups they run as.
import type { KubeObject } from "../../api/types";
import type { AdmissionPlugin } from "./index";
import { admissionForbidden, isObj, podContainers } from "./util";

/** The first field the pod sets that the plugin forbids, as upstream names it. */
export function deniedSecurityContext(pod: KubeObject): string | undefined {
  const psc = pod.spec?.securityContext;
  if (isObj(psc)) {
    if (psc.supplementalGroups !== undefined && psc.supplementalGroups !== null)
      return "pod.Spec.SecurityContext.SupplementalGroups is forbidden";
    if (psc.seLinuxOptions != null) return "pod.Spec.SecurityContext.SELinuxOptions is forbidden";
    if (psc.runAsUser != null) return "pod.Spec.SecurityContext.RunAsUser is forbidden";
    if (psc.fsGroup != null) return "pod.Spec.SecurityContext.FSGroup is forbidden";
    // not in upstream's last version of the plugin; the seed's plugin covers it as well
    if (psc.runAsGroup != null) return "pod.Spec.SecurityContext.RunAsGroup is forbidden";
  }
  for (const { c } of podContainers(pod.spec, false)) {
    const sc = c.securityContext;
    if (!isObj(sc)) continue;
    if (sc.seLinuxOptions != null) return "SecurityContext.SELinuxOptions is forbidden";
    if (sc.runAsUser != null) return "SecurityContext.RunAsUser is forbidden";
    if (sc.runAsGroup != null) return "SecurityContext.RunAsGroup is forbidden";
  }
  return undefined;
}

export const securityContextDeny: AdmissionPlugin = {
  name: "SecurityContextDeny",
  validate(a) {
    if (a.operation !== "CREATE" && a.operation !== "UPDATE") return;
    if (!a.object || a.w.def.group !== "" || a.w.def.resource !== "pods" || a.w.info.subresource) return;
    const why = deniedSecurityContext(a.object);
    if (why) throw admissionForbidden(a, why);
  },
};
