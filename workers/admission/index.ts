// The admission chain: mutating plugins, then validating ones; one rejection rejects.
// Each plugin is a small module; this file only orders them and switches them on or off.
//
// EDGEPLANE_ADMISSION_PLUGINS (a wrangler var) plays upstream's --enable-admission-plugins and
// --disable-admission-plugins: comma-separated plugin names, "Name" or "+Name" enables,
// "-Name" disables, e.g. "SecurityContextDeny,-PodSecurity". Unlisted plugins keep their
// default: all on except SecurityContextDeny.
import type { KubeObject } from "../../api/types";
import { authzAdmission } from "../authz/index";
import type { WriteContext } from "../handlers/write-context";
import { traceOf } from "../trace/recorder";
import { certificatesAdmission } from "./certificates";
import { defaultTolerationSeconds } from "./default-toleration-seconds";
import { initializers } from "./initializers";
import { limitRanger } from "./limit-ranger";
import { namespaceLifecycle } from "./namespace-lifecycle";
import { podSecurity } from "./pod-security";
import { validatingAdmissionPolicy } from "./policy";
import { priority } from "./priority";
import { resourceQuota } from "./resource-quota";
import { runtimeClass } from "./runtime-class";
import { securityContextDeny } from "./security-context-deny";
import { serviceAccount } from "./service-account";
import { defaultStorageClass, persistentVolumeClaimResize, storageObjectInUseProtection } from "./storage";
import { pluginSwitches } from "./util";
import { mutatingWebhooks, validatingWebhooks } from "./webhooks";

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
  /** undoes side effects of an admitted request whose write then failed (quota reservations) */
  rollback?(a: AdmissionAttributes): Promise<void> | void;
}

/** In order; ResourceQuota last, as upstream: it reserves usage only once everything else agreed. */
const PLUGINS: AdmissionPlugin[] = [
  namespaceLifecycle,
  initializers,
  serviceAccount,
  priority,
  defaultTolerationSeconds,
  limitRanger,
  securityContextDeny,
  podSecurity,
  authzAdmission,
  defaultStorageClass,
  storageObjectInUseProtection,
  persistentVolumeClaimResize,
  runtimeClass,
  certificatesAdmission, // CertificateApproval, CertificateSigning, CertificateSubjectRestriction
  mutatingWebhooks, // MutatingAdmissionWebhook: the last mutating plugin
  validatingAdmissionPolicy,
  validatingWebhooks, // ValidatingAdmissionWebhook
  resourceQuota,
];

const OFF_BY_DEFAULT = new Set([securityContextDeny.name]);

let cached: { value: string | undefined; plugins: AdmissionPlugin[] } | undefined;

/** The enabled plugins for a value of EDGEPLANE_ADMISSION_PLUGINS. */
export function enabledPlugins(value: string | undefined): AdmissionPlugin[] {
  if (cached && cached.value === value) return cached.plugins;
  const switches = pluginSwitches(value);
  const plugins = PLUGINS.filter((p) => switches.get(p.name) ?? !OFF_BY_DEFAULT.has(p.name));
  cached = { value, plugins };
  return plugins;
}

function pluginsFor(w: WriteContext): AdmissionPlugin[] {
  const env = w.c.env as unknown as { EDGEPLANE_ADMISSION_PLUGINS?: string };
  return enabledPlugins(env.EDGEPLANE_ADMISSION_PLUGINS);
}

/** The mutating half of admission: may change `object` in place. */
export async function admitMutating(
  w: WriteContext,
  operation: Operation,
  object: KubeObject | undefined,
  old: KubeObject | undefined,
): Promise<void> {
  const a: AdmissionAttributes = { w, operation, object, old };
  for (const p of pluginsFor(w)) if (p.mutate) await p.mutate(a);
}

/** The validating half of admission: throws the first rejection. */
export async function admitValidating(
  w: WriteContext,
  operation: Operation,
  object: KubeObject | undefined,
  old: KubeObject | undefined,
): Promise<void> {
  const a: AdmissionAttributes = { w, operation, object, old };
  for (const p of pluginsFor(w)) if (p.validate) await p.validate(a);
}

/**
 * The whole chain for one write: mutating plugins, then validating ones. Every write goes
 * through it, subresources included, with the attributes upstream gives that write (the
 * resource and subresource of the URL, the kind of the subresource's own object: a pods/eviction
 * CREATE admits a policy/v1 Eviction, a deployments/scale UPDATE an autoscaling/v1 Scale).
 * A subresource whose REST storage validates between the two (a Binding, a TokenRequest) calls
 * the halves itself.
 */
export async function admit(
  w: WriteContext,
  operation: Operation,
  object: KubeObject | undefined,
  old: KubeObject | undefined,
): Promise<void> {
  // a traced pod create runs the same chain, plugin by plugin, under the trace's clock
  const trace = traceOf(w.c.req.raw);
  if (trace) return trace.admit(pluginsFor(w), { w, operation, object, old });
  await admitMutating(w, operation, object, old);
  await admitValidating(w, operation, object, old);
}

/**
 * To be called by the handler when the store refuses a write that admission let through (e.g.
 * AlreadyExists, a failed precondition): gives back what admission reserved for it. `object`
 * and `old` must be the very objects passed to admit().
 */
export async function admissionRollback(
  w: WriteContext,
  operation: Operation,
  object: KubeObject | undefined,
  old: KubeObject | undefined,
): Promise<void> {
  const a: AdmissionAttributes = { w, operation, object, old };
  for (const p of pluginsFor(w)) if (p.rollback) await p.rollback(a);
}
