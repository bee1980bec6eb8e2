import { describe, expect, it } from "vitest";
import {
  bootstrapTokenSecret,
  parseBootstrapToken,
  randomBootstrapToken,
} from "../../../api/bootstrap-token";
import { bootstrapTokens, createBootstrapToken } from "../../../workers/authn/bootstrap";
import { b64, FakeObjects, testEnv } from "./fake-objects";

const env = testEnv();

describe("bootstrap tokens", () => {
  it("parses only <6>.<16> lower-case alphanumerics", () => {
    expect(parseBootstrapToken("abcdef.0123456789abcdef")).toEqual({
      id: "abcdef",
      secret: "0123456789abcdef",
    });
    expect(parseBootstrapToken("ABCDEF.0123456789abcdef")).toBeUndefined();
    expect(parseBootstrapToken("abcdef.0123456789abcde")).toBeUndefined();
    expect(parseBootstrapToken("abcdef0123456789abcdef")).toBeUndefined();
  });

  it("creates kubeadm's Secret shape and authenticates as system:bootstrap:<id>", async () => {
    const objects = new FakeObjects();
    const token = await createBootstrapToken(
      env,
      { ttlSeconds: 600, extraGroups: ["system:bootstrappers:nodes"] },
      { objects },
    );
    expect(token).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    const id = token.slice(0, 6);
    const secret = await objects.get("secrets", "kube-system", `bootstrap-token-${id}`);
    expect(secret?.type).toBe("bootstrap.kubernetes.io/token");
    const data = Object.fromEntries(Object.entries(secret!.data).map(([k, v]) => [k, atob(v as string)]));
    expect(data).toMatchObject({
      "token-id": id,
      "token-secret": token.slice(7),
      "usage-bootstrap-authentication": "true",
      "usage-bootstrap-signing": "true",
      "auth-extra-groups": "system:bootstrappers:nodes",
    });
    const exp = Date.parse(data.expiration);
    expect(exp - Date.now()).toBeGreaterThan(590_000);
    expect(exp - Date.now()).toBeLessThan(610_000);
    expect(await bootstrapTokens(token, { env, objects })).toEqual({
      name: `system:bootstrap:${id}`,
      uid: "",
      groups: ["system:bootstrappers", "system:bootstrappers:nodes"],
    });
  });

  it("does not authenticate expired, wrong-secret, wrong-type, unmarked or bad-group tokens", async () => {
    const objects = new FakeObjects();
    const put = (id: string, mutate: (s: any) => void = () => {}) => {
      const s = bootstrapTokenSecret(id, "0123456789abcdef");
      mutate(s);
      objects.put("secrets", s);
      return `${id}.0123456789abcdef`;
    };
    expect(await bootstrapTokens(put("aaaaaa"), { env, objects })).toBeDefined();
    expect(await bootstrapTokens("aaaaaa.0123456789abcdee", { env, objects })).toBeUndefined();
    expect(await bootstrapTokens("zzzzzz.0123456789abcdef", { env, objects })).toBeUndefined();
    const expired = put("bbbbbb", (s) => (s.data.expiration = b64("2020-01-01T00:00:00Z")));
    expect(await bootstrapTokens(expired, { env, objects })).toBeUndefined();
    const garbled = put("bbbbb2", (s) => (s.data.expiration = b64("tomorrow")));
    expect(await bootstrapTokens(garbled, { env, objects })).toBeUndefined();
    const opaque = put("cccccc", (s) => (s.type = "Opaque"));
    expect(await bootstrapTokens(opaque, { env, objects })).toBeUndefined();
    const unmarked = put("dddddd", (s) => delete s.data["usage-bootstrap-authentication"]);
    expect(await bootstrapTokens(unmarked, { env, objects })).toBeUndefined();
    const badGroup = put("eeeeee", (s) => (s.data["auth-extra-groups"] = b64("system:masters")));
    expect(await bootstrapTokens(badGroup, { env, objects })).toBeUndefined();
    const idMismatch = put("ffffff", (s) => (s.data["token-id"] = b64("gggggg")));
    expect(await bootstrapTokens(idMismatch, { env, objects })).toBeUndefined();
    const deleting = put("hhhhhh", (s) => (s.metadata.deletionTimestamp = "2026-01-01T00:00:00Z"));
    expect(await bootstrapTokens(deleting, { env, objects })).toBeUndefined();
    const noExpiry = put("iiiiii", (s) => delete s.data.expiration);
    expect(await bootstrapTokens(noExpiry, { env, objects })).toBeDefined();
  });

  it("makes distinct well-formed tokens", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 50; i++) {
      const t = randomBootstrapToken();
      expect(parseBootstrapToken(t.token)).toEqual({ id: t.id, secret: t.secret });
      seen.add(t.token);
    }
    expect(seen.size).toBe(50);
  });

  it("refuses extra groups outside system:bootstrappers:", () => {
    expect(() =>
      bootstrapTokenSecret("abcdef", "0123456789abcdef", { extraGroups: ["system:masters"] }),
    ).toThrow("not a valid bootstrap group name");
  });
});
