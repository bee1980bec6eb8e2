import { decodeProtectedHeader, exportJWK, generateKeyPair } from "jose";
import { beforeEach, describe, expect, it } from "vitest";
import {
  handleIssuerDiscovery,
  openidConfiguration,
  serviceAccountJwks,
} from "../../../workers/authn/discovery";
import { resetSigningKeys } from "../../../workers/authn/keys";
import { issueToken } from "../../../workers/authn/serviceaccount";
import { parseJsonSetting } from "../../../workers/authn/types";
import { FakeObjects, testEnv } from "./fake-objects";

beforeEach(() => resetSigningKeys());

describe("service account issuer discovery", () => {
  it("publishes the issuer, the jwks_uri and the public keys whose kid tokens carry", async () => {
    const objects = new FakeObjects();
    const env = testEnv({ EDGEPLANE_SA_ISSUER: "https://edge.example" });
    const conf = await openidConfiguration(env, "https://api.edge.example:6443", objects);
    expect(conf).toEqual({
      issuer: "https://edge.example",
      jwks_uri: "https://api.edge.example:6443/openid/v1/jwks",
      response_types_supported: ["id_token"],
      subject_types_supported: ["public"],
      id_token_signing_alg_values_supported: ["ES256"],
    });
    const jwks = await serviceAccountJwks(env, objects);
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).toMatchObject({ kty: "EC", crv: "P-256", use: "sig", alg: "ES256" });
    expect(jwks.keys[0].d).toBeUndefined();
    const t = await issueToken(
      env,
      { namespace: "n", serviceAccount: "s", uid: "u", expirationSeconds: 600 },
      { objects },
    );
    expect(decodeProtectedHeader(t.token).kid).toBe(jwks.keys[0].kid);
  });

  it("points jwks_uri at https on the host the client asked for, as upstream's default", async () => {
    const { privateKey } = await generateKeyPair("ES256", { extractable: true });
    const env = testEnv({ EDGEPLANE_SA_SIGNING_KEY: JSON.stringify(await exportJWK(privateKey)) });
    // as the local front door hands it on: plain http inside, the client's Host kept
    const r = await handleIssuerDiscovery(
      new Request("http://127.0.0.1:8787/.well-known/openid-configuration"),
      env,
    );
    expect((await r!.json()).jwks_uri).toBe("https://127.0.0.1:8787/openid/v1/jwks");
    const edge = await handleIssuerDiscovery(
      new Request("https://api.edge.example/.well-known/openid-configuration"),
      env,
    );
    expect((await edge!.json()).jwks_uri).toBe("https://api.edge.example/openid/v1/jwks");
  });

  it("answers only its two paths", async () => {
    const { privateKey } = await generateKeyPair("ES256", { extractable: true });
    const env = testEnv({ EDGEPLANE_SA_SIGNING_KEY: JSON.stringify(await exportJWK(privateKey)) });
    const r = await handleIssuerDiscovery(new Request("https://x/openid/v1/jwks"), env);
    expect(r?.headers.get("content-type")).toBe("application/jwk-set+json");
    expect((await r!.json()).keys[0].kty).toBe("EC");
    expect(await handleIssuerDiscovery(new Request("https://x/api"), env)).toBeUndefined();
  });
});

describe("JSON settings", () => {
  it("take JSON or base64 of it", () => {
    expect(parseJsonSetting("X", '{"a":1}')).toEqual({ a: 1 });
    expect(parseJsonSetting("X", btoa('{"a":1}'))).toEqual({ a: 1 });
    expect(() => parseJsonSetting("X", "nonsense")).toThrow("X is neither JSON nor base64-encoded JSON");
  });
});
