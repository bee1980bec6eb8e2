// The custom resources as the controllers know them: from the CustomResourceDefinitions in
// their informer cache, a kind's def (an owner, an autoscaler's target) and a CRD's stored
// version (namespace cleanup, the CRD finalizer).
import {
  type Crd,
  customDef,
  isEstablished,
  servedNames,
  storageVersion,
} from "../../../api/custom/definition";
import { lookupKind } from "../../../api/registry";
import type { ResourceDef } from "../../../api/resource";
import type { ControllerContext } from "../runtime/controller";

export const CRDS = "apiextensions.k8s.io/customresourcedefinitions";

/** The def of the CRD's stored version, whether or not the CRD is still served. */
export function storedDef(crd: Crd): ResourceDef | undefined {
  const v = crd.spec?.versions?.find((x) => x.name === storageVersion(crd));
  return v ? customDef(crd, v) : undefined;
}

/** The def of apiVersion/kind: built in, or a served version of an established CRD. */
export function kindDef(ctx: ControllerContext, apiVersion: string, kind: string): ResourceDef | undefined {
  const builtIn = lookupKind(apiVersion, kind);
  if (builtIn) return builtIn;
  const [group, version] = apiVersion.split("/");
  for (const crd of ctx.informers.list(CRDS) as Crd[]) {
    if (crd.spec?.group !== group || !isEstablished(crd) || servedNames(crd).kind !== kind) continue;
    const v = crd.spec.versions?.find((x) => x.name === version && x.served);
    return v ? customDef(crd, v) : undefined;
  }
  return undefined;
}
