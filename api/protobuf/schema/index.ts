// Registry of protobuf message tables: which package serves which apiVersion, and lookup of
// message specs by qualified name or by (apiVersion, kind).
import { appsV1 } from "./apps-v1";
import { authenticationV1 } from "./authentication-v1";
import { authorizationV1 } from "./authorization-v1";
import { autoscalingV1 } from "./autoscaling-v1";
import { autoscalingV2 } from "./autoscaling-v2";
import { batchV1 } from "./batch-v1";
import { certificatesV1 } from "./certificates-v1";
import { coordinationV1 } from "./coordination-v1";
import { coreV1 } from "./core-v1";
import { discoveryV1 } from "./discovery-v1";
import { eventsV1 } from "./events-v1";
import { metaV1 } from "./meta-v1";
import { networkingV1 } from "./networking-v1";
import { policyV1 } from "./policy-v1";
import { rbacV1 } from "./rbac-v1";
import { schedulingV1 } from "./scheduling-v1";
import { storageV1 } from "./storage-v1";
import { type MessageSpec, type MessageTable, parseMessage } from "./table";

export type { FieldSpec, MessageSpec } from "./table";
export { isScalar } from "./table";

interface Package {
  /** Table prefix, e.g. "core.v1". */
  pkg: string;
  apiVersion: string;
  table: MessageTable;
}

const PACKAGES: Package[] = [
  { pkg: "meta.v1", apiVersion: "meta.k8s.io/v1", table: metaV1 },
  { pkg: "core.v1", apiVersion: "v1", table: coreV1 },
  { pkg: "apps.v1", apiVersion: "apps/v1", table: appsV1 },
  { pkg: "batch.v1", apiVersion: "batch/v1", table: batchV1 },
  { pkg: "rbac.v1", apiVersion: "rbac.authorization.k8s.io/v1", table: rbacV1 },
  { pkg: "authorization.v1", apiVersion: "authorization.k8s.io/v1", table: authorizationV1 },
  { pkg: "authentication.v1", apiVersion: "authentication.k8s.io/v1", table: authenticationV1 },
  { pkg: "policy.v1", apiVersion: "policy/v1", table: policyV1 },
  { pkg: "coordination.v1", apiVersion: "coordination.k8s.io/v1", table: coordinationV1 },
  { pkg: "autoscaling.v1", apiVersion: "autoscaling/v1", table: autoscalingV1 },
  { pkg: "autoscaling.v2", apiVersion: "autoscaling/v2", table: autoscalingV2 },
  { pkg: "networking.v1", apiVersion: "networking.k8s.io/v1", table: networkingV1 },
  { pkg: "scheduling.v1", apiVersion: "scheduling.k8s.io/v1", table: schedulingV1 },
  { pkg: "certificates.v1", apiVersion: "certificates.k8s.io/v1", table: certificatesV1 },
  { pkg: "discovery.v1", apiVersion: "discovery.k8s.io/v1", table: discoveryV1 },
  { pkg: "events.v1", apiVersion: "events.k8s.io/v1", table: eventsV1 },
  { pkg: "storage.v1", apiVersion: "storage.k8s.io/v1", table: storageV1 },
];

const byPkg = new Map(PACKAGES.map((p) => [p.pkg, p]));
const byApiVersion = new Map(PACKAGES.map((p) => [p.apiVersion, p]));

/** Option kinds upstream registers in every group version (metav1.AddToGroupVersion). */
const META_OPTION_KINDS = new Set([
  "DeleteOptions",
  "CreateOptions",
  "UpdateOptions",
  "PatchOptions",
  "GetOptions",
  "ListOptions",
  "Status",
  "WatchEvent",
]);

const cache = new Map<string, MessageSpec | null>();

/** The spec for a qualified message name ("core.v1.PodSpec"), or undefined. */
export function lookupMessage(qualified: string): MessageSpec | undefined {
  const hit = cache.get(qualified);
  if (hit !== undefined) return hit ?? undefined;
  const dot = qualified.lastIndexOf(".");
  const pkg = byPkg.get(qualified.slice(0, dot));
  const name = qualified.slice(dot + 1);
  const text = pkg && Object.hasOwn(pkg.table, name) ? pkg.table[name] : undefined;
  const spec = text === undefined ? null : parseMessage(pkg!.pkg, name, text);
  cache.set(qualified, spec);
  return spec ?? undefined;
}

/** A message is an API kind when it carries ObjectMeta/ListMeta as field 1 ("metadata"). */
function isKindMessage(spec: MessageSpec): boolean {
  const first = spec.byNumber.get(1);
  return (
    first !== undefined &&
    first.jsonName === "metadata" &&
    (first.type === "meta.v1.ObjectMeta" || first.type === "meta.v1.ListMeta")
  );
}

/** The message for a top-level object of this apiVersion and kind, or undefined when unknown. */
export function messageForKind(apiVersion: string, kind: string): MessageSpec | undefined {
  const pkg = byApiVersion.get(apiVersion);
  if (pkg && kind !== "Status" && kind !== "WatchEvent") {
    const spec = lookupMessage(`${pkg.pkg}.${kind}`);
    if (spec && isKindMessage(spec)) return spec;
  }
  if (META_OPTION_KINDS.has(kind) && (pkg || apiVersion === "meta.k8s.io/v1")) {
    return lookupMessage(`meta.v1.${kind}`);
  }
  return undefined;
}

/** Qualified names of every message in the tables (for consistency checks). */
export const allMessageNames = (): string[] =>
  PACKAGES.flatMap((p) => Object.keys(p.table).map((name) => `${p.pkg}.${name}`));
