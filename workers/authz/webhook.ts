// The Webhook authorizer (upstream's --authorization-mode=Webhook): each decision is an
// authorization.k8s.io/v1 SubjectAccessReview POSTed to EDGEPLANE_AUTHZ_WEBHOOK_URL (with
// EDGEPLANE_AUTHZ_WEBHOOK_TOKEN as a bearer token when set). status.allowed is an allow,
// status.denied a deny, neither no opinion. Answers are cached per isolate in an LRU keyed by
// the review's spec: allows for EDGEPLANE_AUTHZ_WEBHOOK_ALLOW_TTL (default 5m), everything
// else for EDGEPLANE_AUTHZ_WEBHOOK_DENY_TTL (default 30s), as upstream's two cache TTLs.
// A webhook that fails (network error, timeout after EDGEPLANE_AUTHZ_WEBHOOK_TIMEOUT_MS,
// default 5000, a non-2xx answer or one that is not JSON) yields the failure policy's
// decision, EDGEPLANE_AUTHZ_WEBHOOK_FAILURE_POLICY "NoOpinion" (default, as upstream's
// legacy flags) or "Deny"; failures are never cached.
import { parseFieldSelector, parseLabelSelector, type Selector } from "../../api/selectors";
import type { Env } from "../../durable-objects/env";
import type { Attributes, AuthorizerResult } from "./types";

export const SAR_API_VERSION = "authorization.k8s.io/v1";
export const DEFAULT_ALLOW_TTL_MS = 5 * 60_000;
export const DEFAULT_DENY_TTL_MS = 30_000;
export const DEFAULT_TIMEOUT_MS = 5000;
const CACHE_SIZE = 8192;
/** upstream does not cache reviews whose attributes add up to more than this many bytes */
const MAX_CACHED_ATTR_SIZE = 10_000;

export interface WebhookVars {
  EDGEPLANE_AUTHZ_WEBHOOK_URL?: string;
  EDGEPLANE_AUTHZ_WEBHOOK_TOKEN?: string;
  EDGEPLANE_AUTHZ_WEBHOOK_ALLOW_TTL?: string;
  EDGEPLANE_AUTHZ_WEBHOOK_DENY_TTL?: string;
  EDGEPLANE_AUTHZ_WEBHOOK_TIMEOUT_MS?: string;
  EDGEPLANE_AUTHZ_WEBHOOK_FAILURE_POLICY?: string;
}

export interface WebhookConfig {
  url: string;
  token?: string;
  allowTtlMs: number;
  denyTtlMs: number;
  timeoutMs: number;
  failurePolicy: "NoOpinion" | "Deny";
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A Go duration ("5m", "30s", "1h30m", "250ms") or a bare number of seconds, in ms. */
export function parseDuration(raw: string | undefined, fallback: number): number {
  const s = raw?.trim();
  if (!s) return fallback;
  if (/^\d+(\.\d+)?$/.test(s)) return Number(s) * 1000;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;
  let total = 0;
  let used = 0;
  for (let m = re.exec(s); m; m = re.exec(s)) {
    total += Number(m[1]) * UNIT_MS[m[2]];
    used += m[0].length;
  }
  return used === s.length ? total : fallback;
}

export function webhookConfig(env: Env): WebhookConfig | undefined {
  const v = env as Env & WebhookVars;
  const url = v.EDGEPLANE_AUTHZ_WEBHOOK_URL?.trim();
  if (!url) return undefined;
  const timeout = Number(v.EDGEPLANE_AUTHZ_WEBHOOK_TIMEOUT_MS);
  return {
    url,
    token: v.EDGEPLANE_AUTHZ_WEBHOOK_TOKEN?.trim() || undefined,
    allowTtlMs: parseDuration(v.EDGEPLANE_AUTHZ_WEBHOOK_ALLOW_TTL, DEFAULT_ALLOW_TTL_MS),
    denyTtlMs: parseDuration(v.EDGEPLANE_AUTHZ_WEBHOOK_DENY_TTL, DEFAULT_DENY_TTL_MS),
    timeoutMs: Number.isFinite(timeout) && timeout > 0 ? timeout : DEFAULT_TIMEOUT_MS,
    failurePolicy: v.EDGEPLANE_AUTHZ_WEBHOOK_FAILURE_POLICY?.trim() === "Deny" ? "Deny" : "NoOpinion",
  };
}

interface SelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

const OPERATORS: Record<string, string> = {
  "=": "In",
  in: "In",
  "!=": "NotIn",
  notin: "NotIn",
  exists: "Exists",
  "!": "DoesNotExist",
};

function requirements(parse: (s: string) => Selector, raw: string | undefined): SelectorRequirement[] {
  if (!raw) return [];
  let sel: Selector;
  try {
    sel = parse(raw);
  } catch {
    return []; // selectors only narrow: one that does not parse is simply not sent
  }
  return sel.map((r) => {
    const req: SelectorRequirement = { key: r.key, operator: OPERATORS[r.op] };
    if (r.values.length) req.values = [...r.values];
    return req;
  });
}

/** The SubjectAccessReview upstream's webhook authorizer sends for `a`. */
export function subjectAccessReviewFor(a: Attributes): Record<string, unknown> {
  const spec: Record<string, unknown> = {};
  if (a.isResourceRequest) {
    const ra: Record<string, unknown> = {};
    const put = (k: string, v: string | undefined) => {
      if (v) ra[k] = v;
    };
    put("namespace", a.namespace);
    put("verb", a.verb);
    put("group", a.apiGroup);
    put("version", a.apiVersion);
    put("resource", a.resource);
    put("subresource", a.subresource);
    put("name", a.name);
    const fields = requirements(parseFieldSelector, a.fieldSelector);
    if (fields.length) ra.fieldSelector = { requirements: fields };
    const labels = requirements(parseLabelSelector, a.labelSelector);
    if (labels.length) ra.labelSelector = { requirements: labels };
    spec.resourceAttributes = ra;
  } else {
    const nra: Record<string, string> = {};
    if (a.path) nra.path = a.path;
    if (a.verb) nra.verb = a.verb;
    spec.nonResourceAttributes = nra;
  }
  if (a.user.name) spec.user = a.user.name;
  if (a.user.groups.length) spec.groups = [...a.user.groups];
  if (a.user.extra && Object.keys(a.user.extra).length) spec.extra = a.user.extra;
  if (a.user.uid) spec.uid = a.user.uid;
  return { apiVersion: SAR_API_VERSION, kind: "SubjectAccessReview", metadata: {}, spec };
}

interface ReviewStatus {
  allowed: boolean;
  denied: boolean;
  reason: string;
}

/** A small LRU with a per-entry expiry (upstream's LRUExpireCache). */
export class ExpiringLru<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();
  constructor(
    private readonly max: number,
    private readonly now: () => number = () => Date.now(),
  ) {}

  get(key: string): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    this.entries.delete(key);
    if (e.expires <= this.now()) return undefined;
    this.entries.set(key, e);
    return e.value;
  }

  set(key: string, value: V, ttlMs: number): void {
    this.entries.delete(key);
    if (ttlMs <= 0) return;
    this.entries.set(key, { value, expires: this.now() + ttlMs });
    while (this.entries.size > this.max) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}

const cache = new ExpiringLru<ReviewStatus>(CACHE_SIZE);

/** Forgets every cached webhook answer in this isolate (tests). */
export function clearWebhookCache(): void {
  cache.clear();
}

function attrSize(a: Attributes): number {
  return (
    a.namespace.length +
    a.verb.length +
    a.apiGroup.length +
    (a.apiVersion ?? "").length +
    a.resource.length +
    a.subresource.length +
    a.name.length +
    a.path.length +
    (a.fieldSelector ?? "").length +
    (a.labelSelector ?? "").length
  );
}

async function callWebhook(cfg: WebhookConfig, body: string, fetcher: typeof fetch): Promise<ReviewStatus> {
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
  if (cfg.token) headers.authorization = `Bearer ${cfg.token}`;
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(new Error(`timed out after ${cfg.timeoutMs}ms`)), cfg.timeoutMs);
  try {
    const res = await fetcher(cfg.url, { method: "POST", headers, body, signal: ctl.signal });
    const text = await res.text();
    if (!res.ok) throw new Error(`webhook answered ${res.status}: ${text.slice(0, 200)}`);
    let review: { status?: { allowed?: unknown; denied?: unknown; reason?: unknown } };
    try {
      review = JSON.parse(text);
    } catch {
      throw new Error("webhook answer is not JSON");
    }
    const st = review?.status ?? {};
    return {
      allowed: st.allowed === true,
      denied: st.denied === true,
      reason: typeof st.reason === "string" ? st.reason : "",
    };
  } finally {
    clearTimeout(timer);
  }
}

/** Decides `a` with the webhook in `cfg` (`fetcher` is for tests; defaults to global fetch). */
export async function webhookAuthorize(
  cfg: WebhookConfig,
  a: Attributes,
  fetcher: typeof fetch = fetch,
): Promise<AuthorizerResult> {
  const review = subjectAccessReviewFor(a);
  const key = `${cfg.url}\n${JSON.stringify(review.spec)}`;
  let status = cache.get(key);
  if (!status) {
    try {
      status = await callWebhook(cfg, JSON.stringify(review), fetcher);
    } catch (e) {
      console.error(`webhook authorizer: ${(e as Error).message}`);
      return cfg.failurePolicy === "Deny"
        ? { decision: "deny", reason: "" }
        : { decision: "noOpinion", reason: "" };
    }
    if (attrSize(a) < MAX_CACHED_ATTR_SIZE)
      cache.set(key, status, status.allowed ? cfg.allowTtlMs : cfg.denyTtlMs);
  }
  // a review both allowed and denied is a deny, as upstream
  if (status.denied) return { decision: "deny", reason: status.reason };
  if (status.allowed) return { decision: "allow", reason: status.reason };
  return { decision: "noOpinion", reason: status.reason };
}

export const webhookAuthorizer = {
  async authorize(a: Attributes, env: Env): Promise<AuthorizerResult> {
    const cfg = webhookConfig(env);
    if (!cfg) return { decision: "noOpinion", reason: "" };
    return webhookAuthorize(cfg, a);
  },
};
