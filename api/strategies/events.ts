// core/v1 events and events.k8s.io/v1 events (one store upstream; two shapes).

import { field, type StatusCause } from "../errors";
import type { ResourceDef, TableColumn } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { validateMeta } from "../validation/metadata";
import { isDNS1123Subdomain, isQualifiedName } from "../validation/names";
import { column, isObject, NAME_DESCRIPTION, translateAge } from "./common";

/** An event in core/v1 terms, whichever group it was written in. */
interface CoreView {
  involvedObject: Record<string, any>;
  reason: string;
  message: string;
  source: Record<string, any>;
  firstTimestamp?: string;
  lastTimestamp?: string;
  count?: number;
  eventTime?: string;
  series?: { count?: number; lastObservedTime?: string };
  type: string;
  reportingController: string;
  reportingInstance: string;
  action: string;
}

/** Whether an event is in the events.k8s.io shape (by apiVersion, else by its field names). */
export function isEventsV1(o: KubeObject): boolean {
  if (typeof o.apiVersion === "string") return o.apiVersion.startsWith("events.k8s.io/");
  return "regarding" in o || "note" in o || "reportingController" in o || "deprecatedSource" in o;
}

/** core/v1 field <-> events.k8s.io/v1 field, as upstream converts them. */
const RENAMES: [string, string][] = [
  ["involvedObject", "regarding"],
  ["message", "note"],
  ["source", "deprecatedSource"],
  ["firstTimestamp", "deprecatedFirstTimestamp"],
  ["lastTimestamp", "deprecatedLastTimestamp"],
  ["count", "deprecatedCount"],
  ["reportingComponent", "reportingController"],
];

function rename(o: KubeObject, apiVersion: string, toNew: boolean): KubeObject {
  const out: KubeObject = { ...o, apiVersion, kind: "Event" };
  for (const [core, v1] of RENAMES) {
    const [from, to] = toNew ? [core, v1] : [v1, core];
    if (from in out) {
      if (out[from] !== undefined && out[from] !== null) out[to] = out[from];
      delete out[from];
    }
  }
  return out;
}

/** A core/v1 Event as events.k8s.io/v1 shows it. */
export const toEventsV1 = (o: KubeObject): KubeObject =>
  isEventsV1(o) ? o : rename(o, "events.k8s.io/v1", true);
/** An events.k8s.io/v1 Event as core/v1 shows it. */
export const toCoreEvent = (o: KubeObject): KubeObject => (isEventsV1(o) ? rename(o, "v1", false) : o);

export function coreView(o: KubeObject): CoreView {
  const isNew = isEventsV1(o);
  const obj = (k: string) => (isObject(o[k]) ? o[k] : {});
  return {
    involvedObject: isNew ? obj("regarding") : obj("involvedObject"),
    reason: o.reason ?? "",
    message: (isNew ? o.note : o.message) ?? "",
    source: isNew ? obj("deprecatedSource") : obj("source"),
    firstTimestamp: isNew ? o.deprecatedFirstTimestamp : o.firstTimestamp,
    lastTimestamp: isNew ? o.deprecatedLastTimestamp : o.lastTimestamp,
    count: isNew ? o.deprecatedCount : o.count,
    eventTime: o.eventTime ?? undefined,
    series: isObject(o.series) ? o.series : undefined,
    type: o.type ?? "",
    reportingController: (isNew ? o.reportingController : o.reportingComponent) ?? "",
    reportingInstance: o.reportingInstance ?? "",
    action: o.action ?? "",
  };
}

const age = (ts: string | undefined, now: number) => translateAge(ts, now);

function eventTimes(o: KubeObject, now: number): { first: string; last: string; count: number } {
  const e = coreView(o);
  const first = e.firstTimestamp ? age(e.firstTimestamp, now) : age(e.eventTime, now);
  let last = e.lastTimestamp ? age(e.lastTimestamp, now) : first;
  let count = e.count ?? 0;
  if (e.series) {
    last = age(e.series.lastObservedTime, now);
    count = e.series.count ?? 0;
  } else if (!count) count = 1;
  return { first, last, count };
}

function target(o: KubeObject): string {
  const io = coreView(o).involvedObject;
  const kind = String(io.kind ?? "").toLowerCase();
  return io.name ? `${kind}/${io.name}` : kind;
}

function source(o: KubeObject): string {
  const e = coreView(o);
  const component = e.source.component || e.reportingController;
  const instance = e.source.host || e.reportingInstance;
  return instance ? `${component}, ${instance}` : component;
}

export const eventColumns: TableColumn[] = [
  column(
    "Last Seen",
    "string",
    "The time at which the most recent occurrence of this event was recorded.",
    (o, now) => eventTimes(o, now).last,
  ),
  column(
    "Type",
    "string",
    "Type of this event (Normal, Warning), new types could be added in the future",
    (o) => o.type ?? "",
  ),
  column(
    "Reason",
    "string",
    "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
    (o) => o.reason ?? "",
  ),
  column("Object", "string", "The object that this event is about.", target),
  column(
    "Subobject",
    "string",
    "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2].",
    (o) => coreView(o).involvedObject.fieldPath ?? "",
    1,
  ),
  column(
    "Source",
    "string",
    "The component reporting this event. Should be a short machine understandable string.",
    source,
    1,
  ),
  column("Message", "string", "A human-readable description of the status of this operation.", (o) =>
    coreView(o).message.trim(),
  ),
  column(
    "First Seen",
    "string",
    "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
    (o, now) => eventTimes(o, now).first,
    1,
  ),
  column(
    "Count",
    "string",
    "The number of times this event has occurred.",
    (o, now) => eventTimes(o, now).count,
    1,
  ),
  {
    name: "Name",
    type: "string",
    format: "name",
    description: NAME_DESCRIPTION,
    priority: 1,
    cell: (o) => o.metadata?.name ?? "",
  },
];

const LIMIT_128 = 128;

/** Upstream's ValidateEventCreate; `strictType` for events.k8s.io/v1 requests. */
export function validateEvent(
  o: KubeObject,
  old: KubeObject | undefined,
  strictType: boolean,
): StatusCause[] {
  const causes = validateMeta(o, old, { namespaced: true });
  if (old) return causes;
  const e = coreView(o);
  const ns = o.metadata?.namespace ?? "";
  const ioNs = e.involvedObject.namespace ?? "";
  const mismatch = () =>
    causes.push(field.invalid("involvedObject.namespace", ioNs, "does not match event.namespace"));
  if (!e.eventTime) {
    if (!ioNs) {
      if (ns !== "" && ns !== "default") mismatch();
    } else if (ns !== ioNs) mismatch();
  } else {
    if (!ioNs && ns !== "default" && ns !== "kube-system") mismatch();
    if (!e.reportingController) causes.push(field.required("reportingController"));
    else
      for (const msg of isQualifiedName(e.reportingController))
        causes.push(field.invalid("reportingController", e.reportingController, msg));
    if (!e.reportingInstance) causes.push(field.required("reportingInstance"));
    if (e.reportingInstance.length > LIMIT_128)
      causes.push(field.invalid("reportingInstance", "", `can have at most ${LIMIT_128} characters`));
    if (!e.action) causes.push(field.required("action"));
    if (e.action.length > LIMIT_128)
      causes.push(field.invalid("action", "", `can have at most ${LIMIT_128} characters`));
    if (!e.reason) causes.push(field.required("reason"));
    if (e.reason.length > LIMIT_128)
      causes.push(field.invalid("reason", "", `can have at most ${LIMIT_128} characters`));
    if (e.message.length > 1024)
      causes.push(field.invalid("message", "", "can have at most 1024 characters"));
  }
  if (strictType && e.type !== "Normal" && e.type !== "Warning")
    causes.push(field.invalid("type", "", `has invalid value: ${e.type}`));
  if (ns) for (const msg of isDNS1123Subdomain(ns)) causes.push(field.invalid("namespace", ns, msg));
  return causes;
}

function coreFields(o: KubeObject): Record<string, string> {
  const e = coreView(o);
  const io = e.involvedObject;
  return {
    "involvedObject.kind": io.kind ?? "",
    "involvedObject.namespace": io.namespace ?? "",
    "involvedObject.name": io.name ?? "",
    "involvedObject.uid": io.uid ?? "",
    "involvedObject.apiVersion": io.apiVersion ?? "",
    "involvedObject.resourceVersion": io.resourceVersion ?? "",
    "involvedObject.fieldPath": io.fieldPath ?? "",
    reason: e.reason,
    reportingComponent: e.reportingController,
    source: e.source.component || e.reportingController,
    type: e.type,
  };
}

/** What the two Event APIs share: one resource, two groups. */
const eventNames = {
  version: "v1",
  resource: "events",
  kind: "Event",
  listKind: "EventList",
  singular: "event",
  namespaced: true,
  shortNames: ["ev"],
  verbs: STANDARD_VERBS,
};

export const events: ResourceDef = {
  ...eventNames,
  group: "",
  strategy: {
    // kube-apiserver's --event-ttl: an event lives an hour after its last update
    ttl: { variable: "EDGEPLANE_EVENT_TTL_SECONDS", defaultSeconds: 3600 },
    validate: (o, old) => validateEvent(o, old, false),
    columns: eventColumns,
    fields: coreFields,
    generation: false,
  },
};

/** events.k8s.io/v1 field selector names -> core/v1's (upstream's field label conversion). */
const V1_FIELD_LABELS: Record<string, string> = {
  "regarding.kind": "involvedObject.kind",
  "regarding.namespace": "involvedObject.namespace",
  "regarding.name": "involvedObject.name",
  "regarding.uid": "involvedObject.uid",
  "regarding.apiVersion": "involvedObject.apiVersion",
  "regarding.resourceVersion": "involvedObject.resourceVersion",
  "regarding.fieldPath": "involvedObject.fieldPath",
  reportingController: "reportingComponent",
};

export const eventsV1: ResourceDef = {
  ...eventNames,
  group: "events.k8s.io",
  // one store with core/v1 Events, as upstream: an event written in either group is seen in both
  storedIn: {
    key: "/events",
    toStorage: toCoreEvent,
    fromStorage: toEventsV1,
    fieldLabels: V1_FIELD_LABELS,
  },
  strategy: {
    validate: (o, old) => validateEvent(o, old, true),
    columns: eventColumns,
    fields: (o) => {
      const c = coreFields(o);
      const out: Record<string, string> = {};
      for (const [v1, core] of Object.entries(V1_FIELD_LABELS)) out[v1] = c[core] ?? "";
      out.reason = c.reason;
      out.type = c.type;
      return out;
    },
    generation: false,
  },
};
