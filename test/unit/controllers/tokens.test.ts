import { describe, expect, it } from "vitest";
import { lookupGVR } from "../../../api/registry";
import { SA_NAME_ANNOTATION, SA_TOKEN_SECRET_TYPE, SA_UID_ANNOTATION } from "../../../api/strategies/config";
import type { KubeObject } from "../../../api/types";
import {
  type AccountRef,
  createTokensController,
} from "../../../durable-objects/controllers/serviceaccount/tokens";
import { FakeCluster } from "./fake";

const SECRET = lookupGVR("", "v1", "secrets")!;
const SA = lookupGVR("", "v1", "serviceaccounts")!;
const CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const dec = (s: string | undefined) =>
  s === undefined ? undefined : Buffer.from(s, "base64").toString("utf8");

function setup(rootCA: string | null = CA) {
  const c = new FakeCluster();
  const issued: { sa: AccountRef; secret: string }[] = [];
  const controller = createTokensController({
    rootCA: rootCA ?? undefined,
    generate: async (sa, secret) => {
      issued.push({ sa, secret });
      return `jwt-for-${sa.name}-${secret}`;
    },
  });
  c.add("/namespaces", { metadata: { name: "team" }, status: { phase: "Active" } });
  const sa = c.add("/serviceaccounts", { metadata: { name: "robot", namespace: "team" } });
  return { c, controller, issued, sa };
}

function tokenSecret(name: string, saName: string, extra: Partial<KubeObject> = {}): KubeObject {
  return {
    metadata: { name, namespace: "team", annotations: { [SA_NAME_ANNOTATION]: saName } },
    type: SA_TOKEN_SECRET_TYPE,
    ...extra,
  } as KubeObject;
}

describe("tokens controller", () => {
  it("fills a token Secret: token for the account, ca.crt, namespace and the account's uid", async () => {
    const { c, controller, issued, sa } = setup();
    c.add("/secrets", tokenSecret("robot-token", "robot"));
    await c.run([controller]);
    const s = c.get("/secrets", "team/robot-token")!;
    expect(dec(s.data.token)).toBe("jwt-for-robot-robot-token");
    expect(dec(s.data["ca.crt"])).toBe(CA);
    expect(dec(s.data.namespace)).toBe("team");
    expect(s.metadata.annotations).toEqual({
      [SA_NAME_ANNOTATION]: "robot",
      [SA_UID_ANNOTATION]: sa.metadata.uid,
    });
    expect(issued).toEqual([
      { sa: { namespace: "team", name: "robot", uid: sa.metadata.uid }, secret: "robot-token" },
    ]);
    // filled: nothing more to do, the token is not made again
    const writes = c.writes.length;
    await c.run([controller]);
    expect(c.writes.length).toBe(writes);
    expect(issued).toHaveLength(1);
  });

  it("puts no ca.crt without a root CA, and replaces a stale one while keeping the token", async () => {
    const bare = setup(null);
    bare.c.add("/secrets", tokenSecret("t", "robot"));
    await bare.c.run([bare.controller]);
    const s = bare.c.get("/secrets", "team/t")!;
    expect(s.data.token).toBeDefined();
    expect(s.data["ca.crt"]).toBeUndefined();

    const { c, controller, issued } = setup();
    c.add(
      "/secrets",
      tokenSecret("t", "robot", {
        data: {
          token: Buffer.from("kept").toString("base64"),
          "ca.crt": Buffer.from("old").toString("base64"),
        },
      }),
    );
    await c.run([controller]);
    const fixed = c.get("/secrets", "team/t")!;
    expect(dec(fixed.data["ca.crt"])).toBe(CA);
    expect(dec(fixed.data.token)).toBe("kept");
    expect(issued).toHaveLength(0);
  });

  it("deletes a token Secret whose account does not exist or has another uid", async () => {
    const { c, controller } = setup();
    const ghost = c.add("/secrets", tokenSecret("ghost-token", "ghost"));
    const stale = tokenSecret("stale-token", "robot");
    stale.metadata.annotations![SA_UID_ANNOTATION] = "uid-of-an-older-robot";
    c.add("/secrets", stale);
    c.add("/secrets", { metadata: { name: "plain", namespace: "team" }, type: "Opaque" } as KubeObject);
    await c.run([controller]);
    expect(c.get("/secrets", "team/ghost-token")).toBeUndefined();
    expect(c.get("/secrets", "team/stale-token")).toBeUndefined();
    expect(c.get("/secrets", "team/plain")).toBeDefined();
    // deleted with the uid it was seen with, as upstream (never another Secret of that name)
    const del = c.writes.find((w) => w.verb === "delete" && w.key === "team/ghost-token")!;
    expect(del.body.preconditions).toEqual({ uid: ghost.metadata.uid });
  });

  it("deletes an account's token Secrets when the account is deleted, and only those", async () => {
    const { c, controller } = setup();
    c.add("/serviceaccounts", { metadata: { name: "other", namespace: "team" } });
    c.add("/secrets", tokenSecret("robot-a", "robot"));
    c.add("/secrets", tokenSecret("robot-b", "robot"));
    c.add("/secrets", tokenSecret("other-a", "other"));
    c.add("/secrets", { metadata: { name: "plain", namespace: "team" }, type: "Opaque" } as KubeObject);
    await c.run([controller]);
    expect(c.get("/secrets", "team/robot-a")?.data?.token).toBeDefined();

    const robot = c.get("/serviceaccounts", "team/robot")!;
    await c.api.remove(SA, "team", "robot");
    // the account's deletion event alone does it (the resync would find them too)
    const ctx = c.ctx();
    for (const key of controller.watches["/serviceaccounts"](robot, robot, ctx))
      await controller.sync(key, ctx);
    expect(c.get("/secrets", "team/robot-a")).toBeUndefined();
    expect(c.get("/secrets", "team/robot-b")).toBeUndefined();
    expect(c.get("/secrets", "team/other-a")).toBeDefined();
    expect(c.get("/secrets", "team/plain")).toBeDefined();
  });

  it("takes a deleted token Secret out of its account's secrets list", async () => {
    const { c, controller } = setup();
    const sa = structuredClone(c.get("/serviceaccounts", "team/robot")!);
    sa.secrets = [{ name: "robot-token" }, { name: "keep" }];
    await c.api.update(SA, sa);
    c.add("/secrets", tokenSecret("robot-token", "robot"));
    await c.run([controller]);
    const last = c.get("/secrets", "team/robot-token")!;
    await c.api.remove(SECRET, "team", "robot-token");
    // the deletion's watch event, as the manager hands it over
    const ctx = c.ctx();
    for (const key of controller.watches["/secrets"](last, last, ctx)) await controller.sync(key, ctx);
    expect(c.get("/serviceaccounts", "team/robot")!.secrets).toEqual([{ name: "keep" }]);
  });
});
