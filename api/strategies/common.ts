// Helpers shared by the strategies: upstream's human durations, standard columns,
// container cells, safe accessors.

import { field, type StatusCause } from "../errors";
import type { TableColumn } from "../resource";
import { wireTime } from "../time";
import type { KubeObject } from "../types";

export const NAME_DESCRIPTION =
  "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
export const CREATION_DESCRIPTION =
  "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/** duration.HumanDuration from apimachinery: "5s", "3m20s", "15m", "5h3m", "2d", "3y45d". */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.trunc(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.trunc(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    const d = Math.trunc(hours / 24);
    return h === 0 ? `${d}d` : `${d}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const dy = Math.trunc(hours / 24) % 365;
    const y = Math.trunc(hours / 24 / 365);
    return dy === 0 ? `${y}y` : `${y}y${dy}d`;
  }
  return `${Math.trunc(hours / 24 / 365)}y`;
}

/** Age of an RFC 3339 timestamp at `now` (ms since epoch), as upstream prints it; "<unknown>" when unset. */
export function translateAge(timestamp: string | undefined | null, now: number): string {
  if (!timestamp) return "<unknown>";
  const t = Date.parse(timestamp);
  if (Number.isNaN(t)) return "<unknown>";
  return humanDuration(now - t);
}

export const nameColumn: TableColumn = {
  name: "Name",
  type: "string",
  format: "name",
  description: NAME_DESCRIPTION,
  priority: 0,
  cell: (o) => o.metadata?.name ?? "",
};

export const ageColumn: TableColumn = {
  name: "Age",
  type: "string",
  description: CREATION_DESCRIPTION,
  priority: 0,
  cell: (o, now) => translateAge(o.metadata?.creationTimestamp, now),
};

/** "Created At" as roles print it: the creation time in RFC 3339, UTC. */
export const createdAtColumn: TableColumn = {
  name: "Created At",
  type: "date",
  description: CREATION_DESCRIPTION,
  priority: 0,
  cell: (o) => {
    const ts = o.metadata?.creationTimestamp;
    if (!ts) return "0001-01-01T00:00:00Z";
    return wireTime(ts);
  },
};

export function column(
  name: string,
  type: TableColumn["type"],
  description: string,
  cell: TableColumn["cell"],
  priority = 0,
): TableColumn {
  return { name, type, description, priority, cell };
}

/** Container names and images joined by commas (layoutContainerCells). */
export function containerCells(containers: any[] | undefined): { names: string; images: string } {
  const list = Array.isArray(containers) ? containers : [];
  return {
    names: list.map((c) => c?.name ?? "").join(","),
    images: list.map((c) => c?.image ?? "").join(","),
  };
}

export const templateContainers = (o: KubeObject) => o.spec?.template?.spec?.containers as any[] | undefined;

export const containersColumn: TableColumn = column(
  "Containers",
  "string",
  "Names of each container in the template.",
  (o) => containerCells(templateContainers(o)).names,
  1,
);
export const imagesColumn: TableColumn = column(
  "Images",
  "string",
  "Images referenced by each container in the template.",
  (o) => containerCells(templateContainers(o)).images,
  1,
);

export const isObject = (v: unknown): v is Record<string, any> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** Ensures obj[key] is an object and returns it. */
export function ensureObject(obj: Record<string, any>, key: string): Record<string, any> {
  if (!isObject(obj[key])) obj[key] = {};
  return obj[key];
}

/**
 * An embedded object's metadata (a pod template's, a job template's, a claim template's)
 * without `creationTimestamp: null`: what every typed client (client-go, kubectl's
 * `rollout undo`) sends for it, because Go writes the zero time as null. Upstream holds it
 * as the zero value, the same as leaving it out; kept as written here, it made an unchanged
 * template differ from the stored one (a new generation, a new ReplicaSet, a rollout).
 */
export function dropZeroTimestamp(holder: unknown): void {
  if (!isObject(holder) || !isObject(holder.metadata) || holder.metadata.creationTimestamp !== null) return;
  delete holder.metadata.creationTimestamp;
  if (Object.keys(holder.metadata).length === 0) delete holder.metadata;
}

export const countKeys = (v: unknown): number => (isObject(v) ? Object.keys(v).length : 0);

/** upstream's ValidateNonnegativeField: one cause when a number is below zero. */
export function nonNegative(value: unknown, path: string): StatusCause[] {
  return typeof value === "number" && value < 0
    ? [field.invalid(path, value, "must be greater than or equal to 0")]
    : [];
}
