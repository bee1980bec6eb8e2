// The apiserver's part of a pod's flow trace (api/trace.ts): for a pod create, the request
// (1.3), authentication (2.1), authorization (2.2), admission plugin by plugin (2.3),
// initializers (3.1) and the store write (2.4), plus a controller's reaction (4.1) when a
// controller sent the create. Kept per request (a WeakMap on the Request, nothing on the
// context type) and handed to the store with the create: no extra call.
import { type ControllerCause, TRACE_CAUSE_HEADER, type TraceSpan, tracingEnabled } from "../../api/trace";
import type { UserInfo } from "../../api/user";
import { otlpEndpoint } from "../../durable-objects/store/otlp";
import type { AdmissionAttributes, AdmissionPlugin } from "../admission/index";
import type { AuthorizerResult } from "../authz/types";
import type { RequestInfo } from "../request-info";
import { fingerprint } from "./fingerprint";

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

interface PluginRun {
  name: string;
  phase: "mutate" | "validate";
  mutated?: boolean;
  ms: number;
  rejected?: string;
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

  /** Runs the admission chain, timing each plugin and noting whether it changed the object. */
  async admit(plugins: AdmissionPlugin[], a: AdmissionAttributes): Promise<void> {
    const start = Date.now();
    const runs: PluginRun[] = [];
    let initializers: PluginRun | undefined;
    try {
      let before = fingerprint(a.object);
      for (const p of plugins) {
        if (!p.mutate) continue;
        const t0 = performance.now();
        const run: PluginRun = { name: p.name, phase: "mutate", ms: 0 };
        runs.push(run);
        try {
          await p.mutate(a);
        } catch (e) {
          run.rejected = (e as Error).message;
          throw e;
        } finally {
          run.ms = round(performance.now() - t0);
        }
        const after = fingerprint(a.object);
        run.mutated = after !== before;
        before = after;
        if (p.name === "Initializers") initializers = run;
      }
      for (const p of plugins) {
        if (!p.validate) continue;
        const t0 = performance.now();
        const run: PluginRun = { name: p.name, phase: "validate", ms: 0 };
        runs.push(run);
        try {
          await p.validate(a);
        } catch (e) {
          run.rejected = (e as Error).message;
          throw e;
        } finally {
          run.ms = round(performance.now() - t0);
        }
      }
    } finally {
      const now = Date.now();
      this.spans.push({
        step: "2.3",
        name: "admission",
        component: "apiserver",
        start,
        end: now,
        detail: {
          plugins: runs,
          mutatedBy: runs.filter((r) => r.mutated).map((r) => r.name),
        },
      });
      this.spans.push({
        step: "3.1",
        name: "initializers",
        component: "apiserver",
        start: now,
        end: now,
        detail: {
          ran: !!initializers,
          mutated: initializers?.mutated ?? false,
          ms: initializers?.ms ?? 0,
          note: "run within mutating admission, before the object is stored",
        },
      });
    }
  }

  /** The spans for the store, with the store step opened now (the shard closes it). */
  forStore(): TraceSpan[] {
    return [...this.spans, { step: "2.4", name: "stored", component: "store", start: Date.now() }];
  }
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
