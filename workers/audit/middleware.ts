// The audit filter: a Hono middleware that, when EDGEPLANE_AUDIT_POLICY is set, writes one
// audit.k8s.io/v1 Event per stage the policy keeps (RequestReceived and ResponseComplete;
// both are written once the response is known, RequestReceived stamped with the arrival
// time), and answers every request with an Audit-Id header (the client's own Audit-ID when
// it sent one). Handlers attach the decoded request body with setAuditRequestObject().
import type { Context, MiddlewareHandler } from "hono";
import type { UserInfo } from "../../api/user";
import type { AppEnv } from "../app-env";
import { authenticate } from "../authn/index";
import { type RequestInfo, requestInfo } from "../request-info";
import { buildEvent, isSensitive } from "./event";
import { evaluatePolicy, parseAuditPolicy, policyFromEnv } from "./policy";
import { consoleSink, isolateRing } from "./sink";
import { type AuditAttributes, type AuditPolicy, type AuditSink, levelAtLeast, type Stage } from "./types";

export interface AuditOptions {
  /** where events go; default the console plus the isolate ring (EDGEPLANE_AUDIT_RING_SIZE) */
  sinks?: AuditSink[];
  /** a policy (object or text) instead of EDGEPLANE_AUDIT_POLICY */
  policy?: AuditPolicy | string;
  now?: () => number;
}

interface AuditState {
  policy: AuditPolicy;
  received: number;
  auditID: string;
  requestObject?: unknown;
  /** what the body's metadata adds to objectRef (a create's name, ...), as upstream */
  objectMeta?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
  annotations: Record<string, string>;
}

type AuditVars = { EDGEPLANE_AUDIT_POLICY?: string; EDGEPLANE_AUDIT_RING_SIZE?: string };

const states = new WeakMap<Request, AuditState>();
type AnyContext = Context<AppEnv>;

function attributesOf(info: RequestInfo, user: UserInfo | undefined): AuditAttributes {
  return {
    user: user ? { name: user.name, groups: user.groups } : undefined,
    verb: info.verb,
    apiGroup: info.apiGroup,
    resource: info.resource,
    subresource: info.subresource,
    namespace: info.namespace,
    name: info.name,
    path: info.path,
    isResourceRequest: info.isResourceRequest,
  };
}

function requestURI(c: AnyContext): string {
  const url = (c.get("url") as URL | undefined) ?? new URL(c.req.url);
  return url.pathname + url.search;
}

function infoOf(c: AnyContext): RequestInfo {
  return (c.get("info") as RequestInfo | undefined) ?? requestInfo(c.req.method, new URL(c.req.url));
}

/**
 * Records the decoded request body for the audit event (kept only when the policy may log
 * it at Request level, and never for Secrets, TokenRequests or TokenReviews).
 */
export function setAuditRequestObject(c: AnyContext, obj: unknown): void {
  recordAuditRequestObject(c.req.raw, obj);
}

/** setAuditRequestObject for code that has the Request but not the context (workers/encoding/request-body.ts). */
export function recordAuditRequestObject(req: Request, obj: unknown): void {
  const st = states.get(req);
  if (!st || obj === undefined) return;
  const meta = (obj as { metadata?: Record<string, unknown> } | null)?.metadata;
  if (meta && typeof meta === "object") {
    const pick = (k: string) => (typeof meta[k] === "string" && meta[k] ? (meta[k] as string) : undefined);
    st.objectMeta = {
      name: pick("name"),
      namespace: pick("namespace"),
      uid: pick("uid"),
      resourceVersion: pick("resourceVersion"),
    };
  }
  if (!st.policy.rules.some((r) => levelAtLeast(r.level, "Request"))) return;
  if (isSensitive(attributesOf(requestInfo(req.method, new URL(req.url)), undefined), obj)) return;
  try {
    st.requestObject = structuredClone(obj);
  } catch {
    st.requestObject = undefined;
  }
}

/** Adds an annotation (e.g. authorization.k8s.io/decision) to this request's events. */
export function addAuditAnnotation(c: AnyContext, key: string, value: string): void {
  const st = states.get(c.req.raw);
  if (st && !(key in st.annotations)) st.annotations[key] = value;
}

/** The audit ID of this request, when it is being audited. */
export function auditIDOf(c: AnyContext): string | undefined {
  return states.get(c.req.raw)?.auditID;
}

const IMPERSONATION = ["impersonate-user", "impersonate-group", "impersonate-uid"];

/** The authenticated user and, when it impersonated someone, the user it acted as. */
async function whoFor(c: AnyContext): Promise<{ user?: UserInfo; impersonated?: UserInfo }> {
  const acting = c.get("user") as UserInfo | undefined;
  if (!acting || !IMPERSONATION.some((h) => c.req.raw.headers.has(h))) return { user: acting };
  let original = (c.var as unknown as Record<string, unknown>).authenticatedUser as UserInfo | undefined;
  if (!original) {
    try {
      original = (await authenticate(c.req.raw, c.env)) ?? undefined;
    } catch {
      original = undefined;
    }
  }
  if (!original || original.name === acting.name) return { user: acting };
  return { user: original, impersonated: acting };
}

async function responseStatus(
  res: Response,
): Promise<{ code: number; status?: string; reason?: string; message?: string }> {
  const code = res.status;
  if (code < 400 || !(res.headers.get("content-type") ?? "").includes("json")) return { code };
  try {
    const body = JSON.parse(await res.clone().text());
    if (body?.kind !== "Status") return { code };
    return {
      code,
      status: typeof body.status === "string" ? body.status : undefined,
      reason: typeof body.reason === "string" ? body.reason : undefined,
      message: typeof body.message === "string" ? body.message : undefined,
    };
  } catch {
    return { code };
  }
}

function setAuditIdHeader(c: AnyContext, id: string): void {
  if (c.res.status === 101) return; // a WebSocket upgrade must stay the very same Response
  try {
    c.res.headers.set("Audit-Id", id);
  } catch {
    const res = new Response(c.res.body, c.res);
    res.headers.set("Audit-Id", id);
    c.res = res;
  }
}

function waitUntil(c: AnyContext, p: Promise<unknown>): void {
  const safe = p.catch((e) => console.error(`audit sink: ${(e as Error).message}`));
  try {
    c.executionCtx.waitUntil(safe);
  } catch {
    // in-process requests have no execution context; the promise runs on regardless
  }
}

export function audit(opts: AuditOptions = {}): MiddlewareHandler<AppEnv> {
  const now = opts.now ?? Date.now;
  const fixed = typeof opts.policy === "string" ? parseAuditPolicy(opts.policy) : opts.policy;
  return async (c, next) => {
    const vars = c.env as unknown as AuditVars;
    const policy = fixed ?? policyFromEnv(vars ?? {});
    if (!policy) return next();
    const st: AuditState = {
      policy,
      received: now(),
      auditID: c.req.header("audit-id")?.trim() || crypto.randomUUID(),
      annotations: {},
    };
    states.set(c.req.raw, st);
    await next();
    setAuditIdHeader(c, st.auditID);
    const { user, impersonated } = await whoFor(c);
    const info = infoOf(c);
    const attrs = attributesOf(info, user);
    const decision = evaluatePolicy(policy, attrs);
    if (decision.level === "None") return;
    const status = await responseStatus(c.res);
    const base = {
      level: decision.level,
      auditID: st.auditID,
      requestURI: requestURI(c),
      attrs,
      apiVersion: info.apiVersion,
      user,
      impersonatedUser: impersonated,
      headers: c.req.raw.headers,
      received: st.received,
      annotations: st.annotations,
      objectMeta: st.objectMeta,
    };
    const stages: Stage[] = ["RequestReceived", "ResponseComplete"];
    const events = stages
      .filter((s) => !decision.omitStages.includes(s))
      .map((stage) =>
        buildEvent({
          ...base,
          stage,
          now: stage === "RequestReceived" ? st.received : now(),
          status: stage === "ResponseComplete" ? status : undefined,
          requestObject: st.requestObject,
        }),
      );
    if (!events.length) return;
    const ringSize = Number(vars?.EDGEPLANE_AUDIT_RING_SIZE ?? 0) || 0;
    const sinks = opts.sinks ?? [consoleSink, isolateRing(ringSize)];
    for (const sink of sinks) {
      try {
        const r = sink.write(events);
        if (r instanceof Promise) waitUntil(c, r);
      } catch (e) {
        console.error(`audit sink: ${(e as Error).message}`);
      }
    }
  };
}
