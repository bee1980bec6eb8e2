import { decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair } from "jose";
import { beforeEach, describe, expect, it } from "vitest";
import {
  generateSigningJwk,
  KEY_SECRET_NAME,
  keyId,
  resetSigningKeys,
  signingKeys,
} from "../../../workers/authn/keys";
import {
  apiAudiences,
  DEFAULT_ISSUER,
  issueLegacyToken,
  issueToken,
  serviceAccountTokens,
} from "../../../workers/authn/serviceaccount";
import { AuthnFailure } from "../../../workers/authn/types";
import { b64, FakeObjects, testEnv } from "./fake-objects";

let objects: FakeObjects;
let env: ReturnType<typeof testEnv>;
let sa: ReturnType<FakeObjects["put"]>;

beforeEach(() => {
  resetSigningKeys();
  objects = new FakeObjects();
  env = testEnv();
  sa = objects.put("serviceaccounts", { metadata: { name: "robot", namespace: "ns1" } });
});

const issue = (extra: Partial<Parameters<typeof issueToken>[1]> = {}, now?: () => number) =>
  issueToken(
    env,
    { namespace: "ns1", serviceAccount: "robot", uid: sa.metadata.uid!, expirationSeconds: 3600, ...extra },
    { objects, now },
  );

const verify = (token: string, o: { now?: () => number; audiences?: string[] } = {}) =>
  serviceAccountTokens(token, { env, objects, ...o });

describe("service account tokens", () => {
  it("issues upstream's claims and verifies them back to the service account user", async () => {
    const t = await issue();
    const claims = decodeJwt(t.token);
    expect(claims.iss).toBe(DEFAULT_ISSUER);
    expect(claims.sub).toBe("system:serviceaccount:ns1:robot");
    expect(claims.aud).toEqual([DEFAULT_ISSUER]);
    expect((claims.exp as number) - (claims.iat as number)).toBe(3600);
    expect(claims.nbf).toBe(claims.iat);
    expect(claims["kubernetes.io"]).toEqual({
      namespace: "ns1",
      serviceaccount: { name: "robot", uid: sa.metadata.uid },
    });
    expect(t.expirationTimestamp).toBe(
      new Date((claims.exp as number) * 1000).toISOString().replace(".000Z", "Z"),
    );
    const header = decodeProtectedHeader(t.token);
    expect(header.alg).toBe("ES256");
    expect(header.kid).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const user = await verify(t.token);
    expect(user).toEqual({
      name: "system:serviceaccount:ns1:robot",
      uid: sa.metadata.uid,
      groups: ["system:serviceaccounts", "system:serviceaccounts:ns1"],
      extra: { "authentication.kubernetes.io/credential-id": [`JTI=${claims.jti}`] },
    });
  });

  it("keeps the generated key in a kube-system Secret and reuses it after a restart", async () => {
    const t = await issue();
    const secret = await objects.get("secrets", "kube-system", KEY_SECRET_NAME);
    expect(secret?.data?.["key.jwk"]).toBeTruthy();
    expect(JSON.parse(atob(secret!.data["key.jwk"])).d).toBeTruthy();
    resetSigningKeys(); // a new isolate
    expect(await verify(t.token)).toBeDefined();
    expect(objects.creates).toBe(1);
  });

  it("uses a key created by a concurrent isolate when its own create loses the race", async () => {
    const other = await generateSigningJwk();
    const racing = new FakeObjects();
    let first = true;
    racing.get = async (r, ns, n) => {
      if (first && r === "secrets") {
        first = false;
        // the other isolate writes between our read and our create
        racing.put("secrets", {
          metadata: { name: n, namespace: ns },
          data: { "key.jwk": b64(JSON.stringify(other)) },
        });
        return undefined;
      }
      return FakeObjects.prototype.get.call(racing, r, ns, n);
    };
    const keys = await signingKeys(env, racing);
    expect(keys.verify[0].jwk.x).toBe(other.x);
  });

  it("never hands one request another's pending load: each loads until one has settled", async () => {
    // workerd cancels a request's pending I/O when that request goes away; a load kept while
    // pending would then never settle for the requests that shared it
    const stalled = new FakeObjects();
    let reads = 0;
    let unblock!: () => void;
    const gate = new Promise<void>((r) => (unblock = r));
    stalled.get = async (r, ns, n) => {
      reads++;
      if (reads === 1) await gate; // the first request's read never comes back (until later)
      return FakeObjects.prototype.get.call(stalled, r, ns, n);
    };
    const first = signingKeys(env, stalled);
    const second = await signingKeys(env, stalled); // settles although the first is stuck
    expect(reads).toBe(2);
    expect(await signingKeys(env, stalled)).toBe(second); // settled: kept, no more reads
    expect(reads).toBe(2);
    unblock();
    // the late one finds the Secret the second made, and the kept set stays the kept one
    expect(await first).toBe(second);
    expect(stalled.creates).toBe(1);
  }, 5000);

  it("signs with a configured RS256 JWK and publishes its kid as upstream computes it", async () => {
    const { privateKey, publicKey } = await generateKeyPair("RS256", { extractable: true });
    env.EDGEPLANE_SA_SIGNING_KEY = JSON.stringify(await exportJWK(privateKey));
    const t = await issue();
    const h = decodeProtectedHeader(t.token);
    expect(h.alg).toBe("RS256");
    expect(h.kid).toBe(await keyId(publicKey));
    expect(objects.creates).toBe(0);
    expect((await verify(t.token))?.name).toBe("system:serviceaccount:ns1:robot");
  });

  it("rejects a token signed by another key", async () => {
    const t = await issue();
    env.EDGEPLANE_SA_SIGNING_KEY = JSON.stringify(await generateSigningJwk());
    await expect(verify(t.token)).rejects.toThrow("invalid signature");
  });

  it("verifies with every key of a configured JWKS (rotation)", async () => {
    const oldKey = await generateSigningJwk();
    env.EDGEPLANE_SA_SIGNING_KEY = JSON.stringify(oldKey);
    const t = await issue();
    env.EDGEPLANE_SA_SIGNING_KEY = JSON.stringify({ keys: [await generateSigningJwk(), oldKey] });
    expect(await verify(t.token)).toBeDefined();
    const fresh = await issue();
    expect(decodeProtectedHeader(fresh.token).kid).not.toBe(decodeProtectedHeader(t.token).kid);
  });

  it("expires with upstream's one-minute leeway, and is not valid before nbf", async () => {
    const start = Date.now();
    const t = await issue({ expirationSeconds: 600 }, () => start);
    expect(await verify(t.token, { now: () => start + 650_000 })).toBeDefined();
    await expect(verify(t.token, { now: () => start + 661_000 })).rejects.toThrow(
      "service account token has expired",
    );
    await expect(verify(t.token, { now: () => start - 120_000 })).rejects.toThrow("not valid yet");
  });

  it("checks the audience against the API audiences or the requested ones", async () => {
    const t = await issue({ audiences: ["vault"] });
    await expect(verify(t.token)).rejects.toThrow(
      `token audiences ["vault"] is invalid for the target audiences ["${DEFAULT_ISSUER}"]`,
    );
    expect(await verify(t.token, { audiences: ["vault", "other"] })).toBeDefined();
    env.EDGEPLANE_API_AUDIENCES = "api,vault";
    expect(apiAudiences(env)).toEqual(["api", "vault"]);
    expect(await verify(t.token)).toBeDefined();
  });

  it("is not recognised when the issuer is not ours; a configured issuer list is honoured", async () => {
    const t = await issue();
    env.EDGEPLANE_SA_ISSUER = "https://edge.example";
    expect(await verify(t.token)).toBeUndefined();
    expect(await verify("not-a-jwt")).toBeUndefined();
    env.EDGEPLANE_SA_ISSUER = `https://edge.example,${DEFAULT_ISSUER}`;
    env.EDGEPLANE_API_AUDIENCES = DEFAULT_ISSUER;
    expect(await verify(t.token)).toBeDefined();
    const fresh = await issue();
    expect(decodeJwt(fresh.token).iss).toBe("https://edge.example");
  });

  it("dies with the service account: deleted, or recreated with another uid", async () => {
    const t = await issue();
    objects.put("serviceaccounts", { metadata: { name: "robot", namespace: "ns1", uid: "other-uid" } });
    await expect(verify(t.token)).rejects.toThrow(
      `service account UID (other-uid) does not match claim (${sa.metadata.uid})`,
    );
    objects.remove("serviceaccounts", "ns1", "robot");
    await expect(verify(t.token)).rejects.toBeInstanceOf(AuthnFailure);
  });

  it("binds to a pod: pod name and uid and node in extra, invalid once the pod is gone", async () => {
    const pod = objects.put("pods", { metadata: { name: "p", namespace: "ns1" } });
    const t = await issue({
      boundObject: { kind: "Pod", name: "p", uid: pod.metadata.uid! },
      node: { name: "n1", uid: "node-uid" },
    });
    expect(decodeJwt(t.token)["kubernetes.io"]).toMatchObject({
      pod: { name: "p", uid: pod.metadata.uid },
      node: { name: "n1", uid: "node-uid" },
    });
    const user = await verify(t.token);
    expect(user?.extra).toMatchObject({
      "authentication.kubernetes.io/pod-name": ["p"],
      "authentication.kubernetes.io/pod-uid": [pod.metadata.uid],
      "authentication.kubernetes.io/node-name": ["n1"],
      "authentication.kubernetes.io/node-uid": ["node-uid"],
    });
    objects.put("pods", {
      metadata: {
        name: "p",
        namespace: "ns1",
        deletionTimestamp: new Date(Date.now() - 120_000).toISOString(),
      },
    });
    await expect(verify(t.token)).rejects.toThrow("service account token has been invalidated");
    objects.remove("pods", "ns1", "p");
    await expect(verify(t.token)).rejects.toThrow("service account token has been invalidated");
  });

  it("binds to a secret and to a node", async () => {
    const secret = objects.put("secrets", { metadata: { name: "s", namespace: "ns1" } });
    const st = await issue({ boundObject: { kind: "Secret", name: "s", uid: secret.metadata.uid! } });
    expect(await verify(st.token)).toBeDefined();
    objects.put("secrets", { metadata: { name: "s", namespace: "ns1", uid: "new" } });
    await expect(verify(st.token)).rejects.toThrow("secret UID (new) does not match");
    const node = objects.put("nodes", { metadata: { name: "n1" } });
    const nt = await issue({ boundObject: { kind: "Node", name: "n1", uid: node.metadata.uid! } });
    expect((await verify(nt.token))?.extra?.["authentication.kubernetes.io/node-name"]).toEqual(["n1"]);
    objects.remove("nodes", "", "n1");
    await expect(verify(nt.token)).rejects.toThrow("invalidated");
  });

  it("verifies legacy secret tokens against the Secret's copy", async () => {
    const token = await issueLegacyToken(
      env,
      { namespace: "ns1", name: "robot", uid: sa.metadata.uid! },
      "robot-token",
      { objects },
    );
    expect(decodeJwt(token).iss).toBe("kubernetes/serviceaccount");
    await expect(verify(token)).rejects.toThrow("token has been invalidated");
    objects.put("secrets", {
      metadata: { name: "robot-token", namespace: "ns1" },
      data: { token: b64(token) },
    });
    expect(await verify(token)).toEqual({
      name: "system:serviceaccount:ns1:robot",
      uid: sa.metadata.uid,
      groups: ["system:serviceaccounts", "system:serviceaccounts:ns1"],
    });
    objects.put("secrets", {
      metadata: { name: "robot-token", namespace: "ns1" },
      data: { token: b64("other") },
    });
    await expect(verify(token)).rejects.toThrow("does not match server's copy");
  });
});
