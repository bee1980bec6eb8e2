import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Env } from "../../../durable-objects/env";
import { authorize } from "../../../workers/authz/chain";
import {
  clearWebhookCache,
  ExpiringLru,
  parseDuration,
  subjectAccessReviewFor,
  type WebhookConfig,
  webhookAuthorize,
  webhookConfig,
} from "../../../workers/authz/webhook";
import { nonRes, res, who } from "./helpers";

interface Seen {
  body: Record<string, any>;
  auth?: string;
  contentType?: string;
}

let server: Server;
let url: string;
const seen: Seen[] = [];
/** how the test webhook answers, by user name */
let answer: (spec: Record<string, any>) => { status?: number; delayMs?: number; body?: unknown };

function read(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let s = "";
    req.on("data", (d) => (s += d));
    req.on("end", () => resolve(s));
  });
}

beforeAll(async () => {
  server = createServer(async (req, resp) => {
    const body = JSON.parse(await read(req));
    seen.push({ body, auth: req.headers.authorization, contentType: req.headers["content-type"] });
    const a = answer(body.spec);
    if (a.delayMs) await new Promise((r) => setTimeout(r, a.delayMs));
    resp.writeHead(a.status ?? 200, { "content-type": "application/json" });
    resp.end(typeof a.body === "string" ? a.body : JSON.stringify(a.body ?? {}));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/authorize`;
});

afterAll(() => new Promise<void>((r) => server.close(() => r())));

beforeEach(() => {
  seen.length = 0;
  clearWebhookCache();
  answer = (spec) => {
    if (spec.user === "alice")
      return {
        body: {
          apiVersion: "authorization.k8s.io/v1",
          kind: "SubjectAccessReview",
          status: { allowed: true },
        },
      };
    if (spec.user === "mallory")
      return { body: { status: { allowed: false, denied: true, reason: "mallory is banned" } } };
    return { body: { status: { allowed: false, reason: "not my call" } } };
  };
});

const cfg = (over: Partial<WebhookConfig> = {}): WebhookConfig => ({
  url,
  allowTtlMs: 300_000,
  denyTtlMs: 30_000,
  timeoutMs: 2000,
  failurePolicy: "NoOpinion",
  ...over,
});

describe("SubjectAccessReview request", () => {
  it("has upstream's shape for resource requests, with the bearer token", async () => {
    const alice = { ...who("alice", "dev"), extra: { scopes: ["a", "b"] } };
    const attrs = res(alice, "list", "deployments", "ns1", {
      apiGroup: "apps",
      apiVersion: "v1",
      subresource: "",
      name: "",
      labelSelector: "app=web,!canary",
      fieldSelector: "metadata.name=x",
    });
    const r = await webhookAuthorize(cfg({ token: "s3cret" }), attrs);
    expect(r).toEqual({ decision: "allow", reason: "" });
    expect(seen).toHaveLength(1);
    expect(seen[0].auth).toBe("Bearer s3cret");
    expect(seen[0].contentType).toBe("application/json");
    expect(seen[0].body).toEqual({
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      metadata: {},
      spec: {
        resourceAttributes: {
          namespace: "ns1",
          verb: "list",
          group: "apps",
          version: "v1",
          resource: "deployments",
          fieldSelector: { requirements: [{ key: "metadata.name", operator: "In", values: ["x"] }] },
          labelSelector: {
            requirements: [
              { key: "app", operator: "In", values: ["web"] },
              { key: "canary", operator: "DoesNotExist" },
            ],
          },
        },
        user: "alice",
        groups: ["dev", "system:authenticated"],
        extra: { scopes: ["a", "b"] },
        uid: "uid-alice",
      },
    });
  });

  it("sends nonResourceAttributes for paths, without a token when none is set", async () => {
    await webhookAuthorize(cfg(), nonRes(who("bob"), "get", "/metrics"));
    expect(seen[0].auth).toBeUndefined();
    expect(seen[0].body.spec.nonResourceAttributes).toEqual({ path: "/metrics", verb: "get" });
    expect(seen[0].body.spec.resourceAttributes).toBeUndefined();
    const sub = subjectAccessReviewFor(
      res(who("bob"), "get", "pods", "a", { name: "p", subresource: "log" }),
    );
    expect((sub.spec as any).resourceAttributes).toMatchObject({ name: "p", subresource: "log" });
  });
});

describe("decisions", () => {
  it("denied is a deny with the webhook's reason; neither is no opinion", async () => {
    expect(await webhookAuthorize(cfg(), res(who("mallory"), "get", "pods", "a"))).toEqual({
      decision: "deny",
      reason: "mallory is banned",
    });
    expect(await webhookAuthorize(cfg(), res(who("bob"), "get", "pods", "a"))).toEqual({
      decision: "noOpinion",
      reason: "not my call",
    });
  });

  it("both allowed and denied is a deny", async () => {
    answer = () => ({ body: { status: { allowed: true, denied: true } } });
    expect((await webhookAuthorize(cfg(), res(who("x"), "get", "pods", "a"))).decision).toBe("deny");
  });
});

describe("caching", () => {
  it("caches allows and denials separately per review spec", async () => {
    let t = 1_000_000;
    const realNow = Date.now;
    Date.now = () => t;
    try {
      const c = cfg({ allowTtlMs: 60_000, denyTtlMs: 5_000 });
      const a = res(who("alice"), "get", "pods", "a");
      const m = res(who("mallory"), "get", "pods", "a");
      await webhookAuthorize(c, a);
      await webhookAuthorize(c, a);
      await webhookAuthorize(c, m);
      await webhookAuthorize(c, m);
      expect(seen).toHaveLength(2);
      // a different request is a different key
      await webhookAuthorize(c, { ...a, verb: "list" });
      expect(seen).toHaveLength(3);
      t += 10_000; // past the deny TTL, within the allow TTL
      await webhookAuthorize(c, a);
      expect(seen).toHaveLength(3);
      expect((await webhookAuthorize(c, m)).decision).toBe("deny");
      expect(seen).toHaveLength(4);
      t += 60_000;
      await webhookAuthorize(c, a);
      expect(seen).toHaveLength(5);
    } finally {
      Date.now = realNow;
    }
  });

  it("the LRU evicts the least recently used entry", () => {
    const lru = new ExpiringLru<number>(2, () => 0);
    lru.set("a", 1, 10);
    lru.set("b", 2, 10);
    lru.get("a");
    lru.set("c", 3, 10);
    expect(lru.get("b")).toBeUndefined();
    expect(lru.get("a")).toBe(1);
    expect(lru.get("c")).toBe(3);
  });
});

describe("failures", () => {
  it("a timeout is no opinion (or a deny with failurePolicy Deny) and is not cached", async () => {
    answer = () => ({ delayMs: 600, body: { status: { allowed: true } } });
    const attrs = res(who("alice"), "get", "pods", "a");
    const start = Date.now();
    expect(await webhookAuthorize(cfg({ timeoutMs: 150 }), attrs)).toEqual({
      decision: "noOpinion",
      reason: "",
    });
    expect(Date.now() - start).toBeLessThan(550);
    expect((await webhookAuthorize(cfg({ timeoutMs: 150, failurePolicy: "Deny" }), attrs)).decision).toBe(
      "deny",
    );
    // once the webhook answers in time the allow comes through: the failures were not cached
    expect((await webhookAuthorize(cfg({ timeoutMs: 2000 }), attrs)).decision).toBe("allow");
  });

  it("a non-2xx or non-JSON answer is a failure", async () => {
    answer = () => ({ status: 500, body: { status: { allowed: true } } });
    expect((await webhookAuthorize(cfg(), res(who("alice"), "get", "pods", "a"))).decision).toBe("noOpinion");
    answer = () => ({ body: "not json" });
    expect((await webhookAuthorize(cfg(), res(who("alice"), "get", "pods", "b"))).decision).toBe("noOpinion");
  });

  it("an unreachable webhook is no opinion", async () => {
    const c = cfg({ url: "http://127.0.0.1:1/authorize" });
    expect((await webhookAuthorize(c, res(who("alice"), "get", "pods", "a"))).decision).toBe("noOpinion");
  });
});

describe("configuration and chain", () => {
  it("reads the env, with upstream's default TTLs", () => {
    expect(webhookConfig({} as Env)).toBeUndefined();
    const c = webhookConfig({ EDGEPLANE_AUTHZ_WEBHOOK_URL: url } as unknown as Env);
    expect(c).toMatchObject({
      url,
      allowTtlMs: 300_000,
      denyTtlMs: 30_000,
      timeoutMs: 5000,
      failurePolicy: "NoOpinion",
    });
    expect(parseDuration("1h30m", 0)).toBe(5_400_000);
    expect(parseDuration("250ms", 0)).toBe(250);
    expect(parseDuration("45", 0)).toBe(45_000);
    expect(parseDuration("soon", 7)).toBe(7);
  });

  it("a webhook deny stops the chain; no opinion falls through", async () => {
    const env = { EDGEPLANE_AUTHZ_WEBHOOK_URL: url, EDGEPLANE_CLUSTER: "t" } as unknown as Env;
    const denied = await authorize(["Webhook", "AlwaysAllow"], res(who("mallory"), "get", "pods", "a"), env);
    expect(denied).toEqual({ decision: "deny", reason: "mallory is banned" });
    const fell = await authorize(["Webhook", "AlwaysAllow"], res(who("bob"), "get", "pods", "a"), env);
    expect(fell.decision).toBe("allow");
    const none = await authorize(["Webhook"], res(who("bob"), "get", "pods", "a"), env);
    expect(none).toEqual({ decision: "noOpinion", reason: "not my call" });
  });
});
