// The admission chain: mutating plugins, then validating ones; one rejection rejects.
// Each plugin is a small module; this file only orders them.
import type { KubeObject } from "../../api/types";
import { authzAdmission } from "../authz/index";
import type { WriteContext } from "../handlers/resource";
import { namespaceLifecycle } from "./namespace-lifecycle";

export type Operation = "CREATE" | "UPDATE" | "DELETE" | "CONNECT";

export interface AdmissionAttributes {
  w: WriteContext;
  operation: Operation;
  object: KubeObject | undefined;
  old: KubeObject | undefined;
}

export interface AdmissionPlugin {
  name: string;
  /** may change attrs.object */
  mutate?(a: AdmissionAttributes): Promise<void> | void;
  /** throws a StatusError to reject */
  validate?(a: AdmissionAttributes): Promise<void> | void;
}

const PLUGINS: AdmissionPlugin[] = [namespaceLifecycle, authzAdmission];

export async function admit(
  w: WriteContext,
  operation: Operation,
  object: KubeObject | undefined,
  old: KubeObject | undefined,
) {
  const a: AdmissionAttributes = { w, operation, object, old };
  for (const p of PLUGINS) if (p.mutate) await p.mutate(a);
  for (const p of PLUGINS) if (p.validate) await p.validate(a);
}
