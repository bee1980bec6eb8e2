import { describe, expect, it } from "vitest";
import type { Env } from "../../../durable-objects/env";
import { AbacAuthorizer, abacAuthorizer, decodeEnvText, parseAbacPolicy } from "../../../workers/authz/abac";
import { authorize, rulesFor } from "../../../workers/authz/chain";
import { nonRes, res, who } from "./helpers";

const V = "abac.authorization.kubernetes.io/v1beta1";
const line = (spec: Record<string, unknown>) => JSON.stringify({ apiVersion: V, kind: "Policy", spec });

const POLICY = [
  "# comment lines and blank lines are skipped",
  "",
  line({ user: "alice", namespace: "*", resource: "*", apiGroup: "*" }),
  line({ user: "bob", namespace: "projectCaribou", resource: "pods", apiGroup: "", readonly: true }),
  line({ group: "ops", namespace: "*", resource: "deployments", apiGroup: "apps" }),
  line({ user: "*", readonly: true, nonResourcePath: "*" }),
  line({ user: "carol", nonResourcePath: "/logs/*" }),
  line({ group: "system:unauthenticated", readonly: true, nonResourcePath: "/version" }),
].join("\n");

const az = new AbacAuthorizer(parseAbacPolicy(POLICY));
const alice = who("alice");
const bob = who("bob");
const dave = who("dave", "ops");
const carol = who("carol");
const anon = { name: "system:anonymous", uid: "", groups: ["system:unauthenticated"] };

describe("ABAC policy file", () => {
  it("parses v1beta1 lines, skipping comments and blanks", () => {
    const ps = parseAbacPolicy(POLICY);
    expect(ps).toHaveLength(6);
    expect(ps[1]).toMatchObject({ user: "bob", namespace: "projectCaribou", readonly: true });
  });

  it("maps a v1beta1 '*' user or group to every authenticated user", () => {
    const [p] = parseAbacPolicy(line({ user: "*", nonResourcePath: "*" }));
    expect(p.user).toBe("");
    expect(p.group).toBe("system:authenticated");
  });

  it("converts unversioned (v0) lines as upstream", () => {
    const [p] = parseAbacPolicy(JSON.stringify({ user: "eve", readonly: true }));
    expect(p).toMatchObject({
      user: "eve",
      namespace: "*",
      resource: "*",
      apiGroup: "*",
      nonResourcePath: "*",
    });
    const [q] = parseAbacPolicy(JSON.stringify({ namespace: "x" }));
    expect(q).toMatchObject({
      group: "system:authenticated",
      namespace: "x",
      resource: "*",
      nonResourcePath: "",
    });
  });

  it("rejects lines that are not policies", () => {
    expect(() => parseAbacPolicy("{not json")).toThrow(/line 1/);
    expect(() => parseAbacPolicy(JSON.stringify({ apiVersion: "v1", kind: "Pod", spec: {} }))).toThrow(
      /unrecognized/,
    );
  });

  it("accepts base64 policy text", () => {
    const b64 = btoa(POLICY);
    expect(decodeEnvText(b64)).toBe(POLICY);
    expect(decodeEnvText(POLICY)).toBe(POLICY);
  });
});

describe("ABAC matching", () => {
  it("allows a user everything a full wildcard policy names", () => {
    expect(az.authorize(res(alice, "create", "pods", "ns1")).decision).toBe("allow");
    expect(az.authorize(res(alice, "delete", "nodes")).decision).toBe("allow");
  });

  it("readonly policies allow get/list/watch only, and only where they match", () => {
    expect(az.authorize(res(bob, "list", "pods", "projectCaribou")).decision).toBe("allow");
    expect(az.authorize(res(bob, "watch", "pods", "projectCaribou")).decision).toBe("allow");
    const create = az.authorize(res(bob, "create", "pods", "projectCaribou"));
    expect(create).toEqual({ decision: "noOpinion", reason: "No policy matched." });
    expect(az.authorize(res(bob, "get", "pods", "other")).decision).toBe("noOpinion");
    expect(az.authorize(res(bob, "get", "services", "projectCaribou")).decision).toBe("noOpinion");
  });

  it("matches groups and API groups", () => {
    const deploy = res(dave, "create", "deployments", "x", { apiGroup: "apps" });
    expect(az.authorize(deploy).decision).toBe("allow");
    expect(az.authorize({ ...deploy, apiGroup: "extensions" }).decision).toBe("noOpinion");
    expect(az.authorize({ ...deploy, user: who("erin") }).decision).toBe("noOpinion");
  });

  it("matches non-resource paths: '*', exact and a trailing-* prefix", () => {
    expect(az.authorize(nonRes(bob, "get", "/healthz")).decision).toBe("allow"); // user "*" readonly
    expect(az.authorize(nonRes(bob, "post", "/healthz")).decision).toBe("noOpinion");
    expect(az.authorize(nonRes(carol, "post", "/logs/kube.log")).decision).toBe("allow");
    expect(az.authorize(nonRes(carol, "post", "/metrics")).decision).toBe("noOpinion");
    // a resource policy never matches a non-resource request and the reverse
    expect(az.authorize(res(carol, "get", "pods", "a")).decision).toBe("noOpinion");
  });

  it("'*' users mean authenticated users only; unauthenticated need their group", () => {
    expect(az.authorize(nonRes(anon, "get", "/healthz")).decision).toBe("noOpinion");
    expect(az.authorize(nonRes(anon, "get", "/version")).decision).toBe("allow");
  });

  it("lists the rules a user has in a namespace", () => {
    const r = az.rulesFor(bob, "projectCaribou");
    expect(r.resourceRules).toEqual([
      { verbs: ["get", "list", "watch"], apiGroups: [""], resources: ["pods"] },
    ]);
    // as upstream, a policy without a namespace ("*" user, nonResourcePath only) lists nothing
    expect(r.nonResourceRules).toEqual([]);
    const all = new AbacAuthorizer(
      parseAbacPolicy(line({ user: "bob", namespace: "*", nonResourcePath: "/api*" })),
    );
    expect(all.rulesFor(bob, "x").nonResourceRules).toEqual([{ verbs: ["*"], nonResourceURLs: ["/api*"] }]);
    expect(az.rulesFor(bob, "other").resourceRules).toEqual([]);
  });
});

describe("ABAC in the chain", () => {
  const env = (policy: string, modes = "ABAC") =>
    ({
      EDGEPLANE_ABAC_POLICY: policy,
      EDGEPLANE_AUTHORIZATION_MODES: modes,
      EDGEPLANE_CLUSTER: "t",
    }) as unknown as Env;

  it("allows from the env policy (base64 too) and has no opinion otherwise", async () => {
    const e = env(btoa(POLICY));
    expect((await authorize(["ABAC"], res(bob, "get", "pods", "projectCaribou"), e)).decision).toBe("allow");
    const no = await authorize(["ABAC"], res(bob, "create", "pods", "projectCaribou"), e);
    expect(no).toEqual({ decision: "noOpinion", reason: "No policy matched." });
    const rules = await rulesFor(["ABAC"], bob, "projectCaribou", e);
    expect(rules.resourceRules).toHaveLength(1);
  });

  it("a broken policy allows nothing", () => {
    const r = abacAuthorizer.authorize(res(alice, "get", "pods", "a"), env("{broken"));
    expect(r.decision).toBe("noOpinion");
    expect(r.reason).toMatch(/ABAC policy error/);
  });
});
