// The audit.k8s.io/v1 shapes edgeplane writes and reads: the Event one request produces
// and the Policy subset that decides how much of it is kept.
export type Level = "None" | "Metadata" | "Request" | "RequestResponse";
export type Stage = "RequestReceived" | "ResponseStarted" | "ResponseComplete" | "Panic";

export const LEVELS: readonly Level[] = ["None", "Metadata", "Request", "RequestResponse"];
export const STAGES: readonly Stage[] = ["RequestReceived", "ResponseStarted", "ResponseComplete", "Panic"];

/** How levels order: Request includes Metadata, and so on. */
export function levelAtLeast(level: Level, min: Level): boolean {
  return LEVELS.indexOf(level) >= LEVELS.indexOf(min);
}

export interface AuditUser {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export interface ObjectReference {
  resource?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  apiGroup?: string;
  apiVersion?: string;
  resourceVersion?: string;
  subresource?: string;
}

export interface ResponseStatus {
  metadata: Record<string, never>;
  status?: string;
  message?: string;
  reason?: string;
  code: number;
}

export interface AuditEvent {
  kind: "Event";
  apiVersion: "audit.k8s.io/v1";
  level: Level;
  auditID: string;
  stage: Stage;
  requestURI: string;
  verb: string;
  user: AuditUser;
  impersonatedUser?: AuditUser;
  sourceIPs?: string[];
  userAgent?: string;
  objectRef?: ObjectReference;
  responseStatus?: ResponseStatus;
  requestObject?: unknown;
  requestReceivedTimestamp: string;
  stageTimestamp: string;
  annotations?: Record<string, string>;
}

export interface GroupResources {
  group?: string;
  resources?: string[];
  resourceNames?: string[];
}

export interface PolicyRule {
  level: Level;
  users?: string[];
  userGroups?: string[];
  verbs?: string[];
  resources?: GroupResources[];
  namespaces?: string[];
  nonResourceURLs?: string[];
  omitStages?: Stage[];
}

export interface AuditPolicy {
  rules: PolicyRule[];
  omitStages?: Stage[];
}

/** What a policy looks at: the request's attributes and, once authenticated, its user. */
export interface AuditAttributes {
  user?: { name: string; groups: string[] };
  verb: string;
  apiGroup: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
  path: string;
  isResourceRequest: boolean;
}

/** Where events go. A Durable Object or Logpush sink implements the same interface. */
export interface AuditSink {
  write(events: AuditEvent[]): void | Promise<void>;
}
