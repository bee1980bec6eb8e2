import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { oidcTokens } from "../../../workers/authn/oidc";
import { AuthnFailure } from "../../../workers/authn/types";
import { FakeObjects, testEnv } from "./fake-objects";

const ISSUER = "https://idp.example.com";
let key: CryptoKey;
let otherKey: CryptoKey;
let jwks: string;

beforeAll(async () => {
  const kp = await generateKeyPair("RS256");
  key = kp.privateKey;
  otherKey = (await generateKeyPair("RS256")).privateKey;
  jwks = JSON.stringify({
    keys: [{ ...(await exportJWK(kp.publicKey)), kid: "k1", alg: "RS256", use: "sig" }],
  });
});

function env(vars: Record<string, string> = {}) {
  return testEnv({
    EDGEPLANE_OIDC_ISSUER_URL: ISSUER,
    EDGEPLANE_OIDC_CLIENT_ID: "kubernetes",
    EDGEPLANE_OIDC_JWKS: jwks,
    ...vars,
  });
}

async function idToken(claims: JWTPayload, o: { signWith?: CryptoKey; exp?: number } = {}) {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    iss: ISSUER,
    aud: "kubernetes",
    sub: "u-123",
    iat: now,
    exp: o.exp ?? now + 600,
    ...claims,
  })
    .setProtectedHeader({ alg: "RS256", kid: "k1" })
    .sign(o.signWith ?? key);
}

const objects = new FakeObjects();
const check = (token: string, e = env()) => oidcTokens(token, { env: e, objects });

describe("OIDC", () => {
  it("prefixes non-email usernames with the issuer, maps groups with their prefix", async () => {
    const t = await idToken({ groups: ["devs", "ops"] });
    expect(
      await check(t, env({ EDGEPLANE_OIDC_GROUPS_CLAIM: "groups", EDGEPLANE_OIDC_GROUPS_PREFIX: "oidc:" })),
    ).toEqual({
      name: `${ISSUER}#u-123`,
      uid: "",
      groups: ["oidc:devs", "oidc:ops"],
    });
    expect((await check(t, env({ EDGEPLANE_OIDC_USERNAME_PREFIX: "-" })))?.name).toBe("u-123");
    expect((await check(t, env({ EDGEPLANE_OIDC_USERNAME_PREFIX: "idp:" })))?.name).toBe("idp:u-123");
    const single = await idToken({ groups: "solo" });
    expect((await check(single, env({ EDGEPLANE_OIDC_GROUPS_CLAIM: "groups" })))?.groups).toEqual(["solo"]);
  });

  it("uses the email claim unprefixed, and insists on email_verified when present", async () => {
    const e = env({ EDGEPLANE_OIDC_USERNAME_CLAIM: "email" });
    expect((await check(await idToken({ email: "a@x.io", email_verified: true }), e))?.name).toBe("a@x.io");
    expect((await check(await idToken({ email: "a@x.io" }), e))?.name).toBe("a@x.io");
    await expect(check(await idToken({ email: "a@x.io", email_verified: false }), e)).rejects.toThrow(
      "oidc: email not verified",
    );
    await expect(check(await idToken({}), e)).rejects.toThrow(
      'oidc: parse username claims "email": claim not present',
    );
  });

  it("rejects a wrong audience, an expired token, a foreign signature", async () => {
    await expect(check(await idToken({ aud: "someone-else" }))).rejects.toBeInstanceOf(AuthnFailure);
    await expect(check(await idToken({}, { exp: Math.floor(Date.now() / 1000) - 10 }))).rejects.toThrow(
      /exp/,
    );
    await expect(check(await idToken({}, { signWith: otherKey }))).rejects.toBeInstanceOf(AuthnFailure);
    expect(await check(await idToken({ aud: ["x", "kubernetes"] }))).toBeDefined();
  });

  it("ignores tokens of other issuers, and everything when OIDC is off", async () => {
    expect(await check(await idToken({ iss: "https://elsewhere" }))).toBeUndefined();
    expect(await check("opaque-token")).toBeUndefined();
    expect(await oidcTokens(await idToken({}), { env: testEnv(), objects })).toBeUndefined();
  });

  it("enforces required claims", async () => {
    const e = env({ EDGEPLANE_OIDC_REQUIRED_CLAIMS: "tenant=a" });
    expect(await check(await idToken({ tenant: "a" }), e)).toBeDefined();
    await expect(check(await idToken({ tenant: "b" }), e)).rejects.toThrow("required claim tenant");
  });
});
