// The apiserver's part of a pod's flow trace (api/trace.ts): for a pod create, the request
// (1.3), authentication (2.1), authorization (2.2), admission plugin by plugin (2.3),
// initializers (3.1) and the store write (2.4), plus a controller's reaction (4.1) when a
// controller sent the create. Kept per request (a WeakMap on the Request, nothing on the
// context type) as a few plain values, and handed to the store with the create as one compact
// record (api/trace-record.ts): no extra call, no row of its own.
import { type ControllerCause, TRACE_CAUSE_HEADER, tracingEnabled } from "../../api/trace";
import { type CreateRecord, encodeCreateRecord } from "../../api/trace-record";
import type { UserInfo } from "../../api/user";
import { otlpEndpoint } from "../../durable-objects/store/otlp";
import type { AdmissionAttributes, AdmissionPlugin } from "../admission/index";
import type { AuthorizerResult } from "../authz/types";
import type { RequestInfo } from "../request-info";
import { shapeProbe } from "./fingerprint";

const recorders = new WeakMap<Request, TraceRecorder>();

/** The recorder of this request, when it is a traced pod create. */
export function traceOf(req: Request): TraceRecorder | undefined {
  return recorders.get(req);
}

let checked = false;

/** Starts a recorder for a pod create, when tracing is on. */
export function startTrace(req: Request, info: RequestInfo, env: unknown): TraceRecorder | undefined {
  if (!checked) {
    // a malformed export endpoint is reported with the first request (the start's readiness probe)
    checked = true;
    otlpEndpoint(env);
  }
  if (info.verb !== "create" || info.resource !== "pods" || info.apiGroup !== "" || info.subresource) return;
  if (!tracingEnabled(env)) return;
  const t = new TraceRecorder(req, info.verb);
  recorders.set(req, t);
  return t;
}

/** How the request carried its credential, from its headers (the authenticators' order). */
function credentialKind(req: Request, internal: boolean): string {
  if (internal) return "in-process";
  const auth = req.headers.get("authorization") ?? "";
  if (/^bearer /i.test(auth)) return dots(auth) === 2 ? "bearer token (JWT)" : "bearer token";
  if (/^basic /i.test(auth)) return "basic";
  return "x509 client certificate";
}

/** How many dots a token has (a JWT has two), without splitting it. */
function dots(s: string): number {
  let n = 0;
  for (let i = s.indexOf("."); i >= 0 && n < 3; i = s.indexOf(".", i + 1)) n++;
  return n;
}

export class TraceRecorder {
  /** when the request arrived (1.3), where authentication began */
  private readonly received = Date.now();
  private authn?: CreateRecord["authn"];
  private internal = false;
  private authz?: CreateRecord["authz"];
  private admission?: CreateRecord["admission"];

  constructor(
    private readonly req: Request,
    private readonly verb: string,
  ) {}

  authenticated(user: UserInfo, internal: boolean): void {
    this.internal = internal;
    this.authn = {
      end: Date.now(),
      method: credentialKind(this.req, internal),
      user: user.name,
      groups: user.groups,
    };
  }

  authorized(start: number, r: AuthorizerResult & { mode?: string }): void {
    this.authz = {
      start,
      end: Date.now(),
      decision: r.decision,
      authorizer: r.mode ?? "",
      reason: r.reason || (r.mode === "system:masters" ? "member of system:masters: always allowed" : ""),
    };
  }

  /** Runs the admission chain, noting which plugins changed the object. */
  async admit(plugins: AdmissionPlugin[], a: AdmissionAttributes): Promise<void> {
    const start = Date.now();
    const mutatedBy: string[] = [];
    let ran = 0;
    let initializersRan = false;
    let before = shapeProbe(a.object);
    for (const p of plugins) {
      if (!p.mutate) continue;
      ran++;
      if (p.name === "Initializers") initializersRan = true;
      await p.mutate(a);
      const after = shapeProbe(a.object);
      if (after !== before) mutatedBy.push(p.name);
      before = after;
    }
    for (const p of plugins) {
      if (!p.validate) continue;
      ran++;
      await p.validate(a);
    }
    // a refused create is not stored, nor is its trace: only a passed chain is noted
    this.admission = {
      start,
      end: Date.now(),
      mutatedBy,
      ran,
      initializersRan,
      initializersMutated: mutatedBy.includes("Initializers"),
    };
  }

  /**
   * The record for the store (api/trace-record.ts), sent with the create: the store step
   * (2.4) opens now and the shard closes it at its commit, where the initializers' mark (3.1)
   * sits (they ran within mutating admission, before the pod was stored or visible).
   */
  forStore(): string {
    return encodeCreateRecord({
      verb: this.verb,
      userAgent: this.req.headers.get("user-agent") ?? "",
      received: this.received,
      authn: this.authn,
      cause: this.cause(),
      authz: this.authz,
      admission: this.admission,
      storeStart: Date.now(),
    });
  }

  /** Only the control plane's own components may say which controller made a pod. */
  private cause(): CreateRecord["cause"] {
    if (!this.internal) return undefined;
    const header = this.req.headers.get(TRACE_CAUSE_HEADER);
    if (!header) return undefined;
    try {
      const c = JSON.parse(header) as ControllerCause;
      if (typeof c?.since === "number")
        return { controller: String(c.controller), owner: c.owner, since: c.since };
    } catch {
      // a malformed cause is no reason to fail a create
    }
    return undefined;
  }
}
