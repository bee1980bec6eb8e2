// The apiserver's part of a pod's flow trace (api/trace.ts): for a pod create, the request
// (1.3), authentication (2.1), authorization (2.2), admission plugin by plugin (2.3),
// initializers (3.1) and the store write (2.4), plus a controller's reaction (4.1) when a
// controller sent the create. Kept per request (a WeakMap on the Request, nothing on the
// context type) and handed to the store with the create: no extra call.
import {
  type ControllerCause,
  type EncodedSpans,
  STORED_AT,
  STORED_RV,
  TRACE_CAUSE_HEADER,
  type TraceSpan,
  tracingEnabled,
} from "../../api/trace";
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
  if (/^bearer /i.test(auth)) return auth.split(".").length === 3 ? "bearer token (JWT)" : "bearer token";
  if (/^basic /i.test(auth)) return "basic";
  return "x509 client certificate";
}

export class TraceRecorder {
  readonly spans: TraceSpan[] = [];
  private authnStart: number;
  private cause?: ControllerCause;

  constructor(
    private readonly req: Request,
    verb: string,
  ) {
    const now = Date.now();
    this.authnStart = now;
    this.spans.push({
      step: "1.3",
      name: "request received",
      component: "apiserver",
      start: now,
      end: now,
      detail: { verb, userAgent: req.headers.get("user-agent") ?? "" },
    });
    const cause = req.headers.get(TRACE_CAUSE_HEADER);
    if (cause) {
      try {
        this.cause = JSON.parse(cause) as ControllerCause;
      } catch {
        // a malformed cause is no reason to fail a create
      }
    }
  }

  authenticated(user: UserInfo, internal: boolean): void {
    const now = Date.now();
    this.spans.push({
      step: "2.1",
      name: "authentication",
      component: "apiserver",
      start: this.authnStart,
      end: now,
      detail: { method: credentialKind(this.req, internal), user: user.name, groups: user.groups },
    });
    // only the control plane's own components may say which controller made a pod
    if (this.cause && internal && typeof this.cause.since === "number") {
      this.spans.push({
        step: "4.1",
        name: "controller",
        component: String(this.cause.controller),
        start: Math.min(this.cause.since, this.authnStart),
        end: this.authnStart,
        detail: {
          controller: this.cause.controller,
          owner: this.cause.owner,
          reactionMs: Math.max(0, this.authnStart - this.cause.since),
        },
      });
    }
  }

  authorized(start: number, r: AuthorizerResult & { mode?: string }): void {
    this.spans.push({
      step: "2.2",
      name: "authorization",
      component: "apiserver",
      start,
      end: Date.now(),
      detail: {
        decision: r.decision,
        authorizer: r.mode ?? "",
        reason: r.reason || (r.mode === "system:masters" ? "member of system:masters: always allowed" : ""),
      },
    });
  }

  /** Runs the admission chain, noting which plugins changed the object and which refused it. */
  async admit(plugins: AdmissionPlugin[], a: AdmissionAttributes): Promise<void> {
    const start = Date.now();
    const mutating: string[] = [];
    const validating: string[] = [];
    const mutatedBy: string[] = [];
    let rejectedBy: string | undefined;
    let rejection: string | undefined;
    let current = "";
    try {
      let before = shapeProbe(a.object);
      for (const p of plugins) {
        if (!p.mutate) continue;
        current = p.name;
        mutating.push(p.name);
        await p.mutate(a);
        const after = shapeProbe(a.object);
        if (after !== before) mutatedBy.push(p.name);
        before = after;
      }
      for (const p of plugins) {
        if (!p.validate) continue;
        current = p.name;
        validating.push(p.name);
        await p.validate(a);
      }
    } catch (e) {
      rejectedBy = current;
      rejection = (e as Error).message;
      throw e;
    } finally {
      // the chain itself is the configuration's (the read shows it); each pod keeps what differs
      const detail: Record<string, unknown> = { mutatedBy, ran: mutating.length + validating.length };
      if (rejectedBy) Object.assign(detail, { rejectedBy, rejection });
      this.spans.push({
        step: "2.3",
        name: "admission",
        component: "apiserver",
        start,
        end: Date.now(),
        detail,
      });
      this.initializersRan = mutating.includes("Initializers");
      this.initializersMutated = mutatedBy.includes("Initializers");
    }
  }

  private initializersRan = false;
  private initializersMutated = false;

  /**
   * The spans for the store, encoded (EncodedSpans): the store step (2.4) opens now and the
   * shard closes it at its commit, where the initializers' mark (3.1) sits (they ran within
   * mutating admission, before the pod was stored or visible).
   */
  forStore(): EncodedSpans {
    const spans = JSON.stringify(this.spans);
    const stored = `{"step":"2.4","name":"stored","component":"store","start":${Date.now()},"end":${STORED_AT},"detail":{"resourceVersion":${STORED_RV}}}`;
    const init = `{"step":"3.1","name":"initializers","component":"apiserver","start":${STORED_AT},"end":${STORED_AT},"detail":{"ran":${this.initializersRan},"mutated":${this.initializersMutated}}}`;
    return { json: `${spans.slice(0, -1)},${stored},${init}]`, count: this.spans.length + 2 };
  }
}
