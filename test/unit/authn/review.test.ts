import { beforeEach, describe, expect, it } from "vitest";
import { StatusError } from "../../../api/errors";
import { resetSigningKeys } from "../../../workers/authn/keys";
import { selfSubjectReview, tokenReview } from "../../../workers/authn/review";
import { DEFAULT_ISSUER, issueToken } from "../../../workers/authn/serviceaccount";
import { FakeObjects, testEnv } from "./fake-objects";

beforeEach(() => resetSigningKeys());

describe("reviews", () => {
  const env = testEnv({ EDGEPLANE_TOKENS: "bobtok,bob,b1,devs" });

  it("TokenReview: the token's user in the API's spelling, or an error", async () => {
    const objects = new FakeObjects();
    const ok = await tokenReview(env, { spec: { token: "bobtok" } }, { objects });
    expect(ok).toMatchObject({
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenReview",
      status: {
        authenticated: true,
        user: { username: "bob", uid: "b1", groups: ["devs", "system:authenticated"] },
        audiences: [DEFAULT_ISSUER],
      },
    });
    const bad = await tokenReview(env, { spec: { token: "nope" } }, { objects });
    expect(bad.status.authenticated).toBeUndefined();
    expect(bad.status.error).toBeTruthy();
  });

  it("TokenReview checks service account tokens against the asked audiences", async () => {
    const objects = new FakeObjects();
    const sa = objects.put("serviceaccounts", { metadata: { name: "r", namespace: "n" } });
    const t = await issueToken(
      env,
      {
        namespace: "n",
        serviceAccount: "r",
        uid: sa.metadata.uid!,
        expirationSeconds: 600,
        audiences: ["vault"],
      },
      { objects },
    );
    const forVault = await tokenReview(env, { spec: { token: t.token, audiences: ["vault"] } }, { objects });
    expect(forVault.status).toMatchObject({
      authenticated: true,
      user: { username: "system:serviceaccount:n:r" },
      audiences: ["vault"],
    });
    const forApi = await tokenReview(env, { spec: { token: t.token } }, { objects });
    expect(forApi.status.error).toContain("is invalid for the target audiences");
  });

  it("TokenReview needs a token", async () => {
    await expect(tokenReview(env, { spec: {} }, { objects: new FakeObjects() })).rejects.toBeInstanceOf(
      StatusError,
    );
  });

  it("SelfSubjectReview echoes the caller", () => {
    const r = selfSubjectReview(
      { name: "bob", uid: "", groups: ["system:authenticated"] },
      Date.parse("2026-01-01T00:00:00.5Z"),
    );
    expect(r).toEqual({
      apiVersion: "authentication.k8s.io/v1",
      kind: "SelfSubjectReview",
      metadata: { creationTimestamp: "2026-01-01T00:00:00Z" },
      status: { userInfo: { username: "bob", groups: ["system:authenticated"] } },
    });
  });
});
