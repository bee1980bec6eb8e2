// Building audit events, and the project rule that secrets never reach the log in clear:
// Secrets, TokenRequests (serviceaccounts/token) and TokenReviews never have their request
// body recorded whatever the level says (such events are written at Metadata level), and no
// header, Authorization or otherwise, is ever recorded.

import { microTime } from "../../api/time";
import type { UserInfo } from "../../api/user";
import type { AuditAttributes, AuditEvent, AuditUser, Level, ObjectReference, Stage } from "./types";

const SENSITIVE_KINDS = new Set(["Secret", "SecretList", "TokenRequest", "TokenReview"]);

/** Whether a request about `a` (with body `obj`) may carry credentials in its body. */
export function isSensitive(a: AuditAttributes, obj?: unknown): boolean {
  if (a.isResourceRequest) {
    if (a.apiGroup === "" && a.resource === "secrets") return true;
    if (a.apiGroup === "" && a.resource === "serviceaccounts" && a.subresource === "token") return true;
    if (a.apiGroup === "authentication.k8s.io" && a.resource === "tokenreviews") return true;
  }
  return containsSensitiveKind(obj, 0);
}

function containsSensitiveKind(obj: unknown, depth: number): boolean {
  if (!obj || typeof obj !== "object" || depth > 3) return false;
  const o = obj as { kind?: unknown; items?: unknown };
  if (typeof o.kind === "string" && SENSITIVE_KINDS.has(o.kind)) return true;
  return Array.isArray(o.items) && o.items.some((i) => containsSensitiveKind(i, depth + 1));
}

/** The level an event is written at: at most Metadata for sensitive requests. */
export function effectiveLevel(level: Level, a: AuditAttributes, obj?: unknown): Level {
  if (level === "None" || level === "Metadata") return level;
  return isSensitive(a, obj) ? "Metadata" : level;
}

export function auditUser(u: UserInfo | undefined): AuditUser {
  if (!u) return {};
  const out: AuditUser = { username: u.name };
  if (u.uid) out.uid = u.uid;
  if (u.groups.length) out.groups = [...u.groups];
  if (u.extra && Object.keys(u.extra).length) out.extra = u.extra;
  return out;
}

export interface ObjectMetaRef {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
}

/** The request's object; fields the path lacks come from the body's metadata, as upstream. */
export function objectRef(
  a: AuditAttributes,
  apiVersion: string,
  meta: ObjectMetaRef = {},
): ObjectReference | undefined {
  if (!a.isResourceRequest) return undefined;
  const ref: ObjectReference = {};
  if (a.resource) ref.resource = a.resource;
  const namespace = a.namespace || meta.namespace;
  if (namespace) ref.namespace = namespace;
  const name = a.name || meta.name;
  if (name) ref.name = name;
  if (meta.uid) ref.uid = meta.uid;
  if (a.apiGroup) ref.apiGroup = a.apiGroup;
  if (apiVersion) ref.apiVersion = apiVersion;
  if (meta.resourceVersion) ref.resourceVersion = meta.resourceVersion;
  if (a.subresource) ref.subresource = a.subresource;
  return ref;
}

/** The client addresses: X-Forwarded-For, then X-Real-Ip, then CF-Connecting-IP, deduplicated. */
export function sourceIPs(headers: Headers): string[] {
  const out: string[] = [];
  const add = (ip: string | null | undefined) => {
    const v = ip?.trim();
    if (v && !out.includes(v)) out.push(v);
  };
  for (const ip of (headers.get("x-forwarded-for") ?? "").split(",")) add(ip);
  add(headers.get("x-real-ip"));
  add(headers.get("cf-connecting-ip"));
  return out;
}

export interface EventInput {
  level: Level;
  stage: Stage;
  auditID: string;
  requestURI: string;
  attrs: AuditAttributes;
  apiVersion: string;
  user?: UserInfo;
  impersonatedUser?: UserInfo;
  headers: Headers;
  received: number;
  now: number;
  status?: { code: number; status?: string; reason?: string; message?: string };
  requestObject?: unknown;
  annotations?: Record<string, string>;
  objectMeta?: ObjectMetaRef;
}

/** One event; requestObject only at Request level and above, and never for sensitive requests. */
export function buildEvent(i: EventInput): AuditEvent {
  const level = effectiveLevel(i.level, i.attrs, i.requestObject);
  const ev: AuditEvent = {
    kind: "Event",
    apiVersion: "audit.k8s.io/v1",
    level,
    auditID: i.auditID,
    stage: i.stage,
    requestURI: i.requestURI,
    verb: i.attrs.verb,
    user: auditUser(i.user),
    requestReceivedTimestamp: microTime(i.received),
    stageTimestamp: microTime(i.now),
  };
  if (i.impersonatedUser) ev.impersonatedUser = auditUser(i.impersonatedUser);
  const ips = sourceIPs(i.headers);
  if (ips.length) ev.sourceIPs = ips;
  const ua = i.headers.get("user-agent");
  if (ua) ev.userAgent = ua;
  const ref = objectRef(i.attrs, i.apiVersion, i.objectMeta);
  if (ref) ev.objectRef = ref;
  if (i.status) {
    ev.responseStatus = { metadata: {}, code: i.status.code };
    if (i.status.status) ev.responseStatus.status = i.status.status;
    if (i.status.message) ev.responseStatus.message = i.status.message;
    if (i.status.reason) ev.responseStatus.reason = i.status.reason;
  }
  if (level !== "Metadata" && i.requestObject !== undefined) ev.requestObject = i.requestObject;
  // keep upstream's field order: the timestamps come after the payload
  const { requestReceivedTimestamp, stageTimestamp } = ev;
  delete (ev as Partial<AuditEvent>).requestReceivedTimestamp;
  delete (ev as Partial<AuditEvent>).stageTimestamp;
  ev.requestReceivedTimestamp = requestReceivedTimestamp;
  ev.stageTimestamp = stageTimestamp;
  if (i.annotations && Object.keys(i.annotations).length) ev.annotations = { ...i.annotations };
  return ev;
}
