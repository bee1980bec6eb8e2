import { beforeEach, describe, expect, it } from "vitest";
import { StatusError } from "../../../api/errors";
import { authenticate, bearerToken } from "../../../workers/authn/index";
import { resetSigningKeys } from "../../../workers/authn/keys";
import { issueToken } from "../../../workers/authn/serviceaccount";
import { authenticateToken, clearTokenCache } from "../../../workers/authn/tokens";
import { FakeObjects, testEnv } from "./fake-objects";

let objects: FakeObjects;
let env: ReturnType<typeof testEnv>;

beforeEach(() => {
  resetSigningKeys();
  clearTokenCache();
  objects = new FakeObjects();
  env = testEnv({
    EDGEPLANE_TOKENS: 'admintok,admin,admin,system:masters\nbobtok,bob,b1,"devs"',
    EDGEPLANE_BASIC_AUTH_FILE: "pw,carol,c1,ops",
  });
});

const req = (headers: Record<string, string> = {}) => new Request("https://x/api", { headers });

async function code(p: Promise<unknown>) {
  try {
    await p;
  } catch (e) {
    if (e instanceof StatusError) return e.code;
    throw e;
  }
  return 0;
}

describe("authenticate", () => {
  it("no credentials: anonymous (null)", async () => {
    expect(await authenticate(req(), env, { objects })).toBeNull();
  });

  it("static tokens, with system:authenticated", async () => {
    expect(await authenticate(req({ authorization: "Bearer bobtok" }), env, { objects })).toEqual({
      name: "bob",
      uid: "b1",
      groups: ["devs", "system:authenticated"],
    });
    expect(await authenticate(req({ authorization: "bearer admintok" }), env, { objects })).toMatchObject({
      name: "admin",
    });
  });

  it("an unknown token, a recognised-but-invalid one, a wrong password: 401", async () => {
    expect(await code(authenticate(req({ authorization: "Bearer nope" }), env, { objects }))).toBe(401);
    expect(
      await code(authenticate(req({ authorization: "Bearer abcdef.0123456789abcdef" }), env, { objects })),
    ).toBe(401);
    const sa = objects.put("serviceaccounts", { metadata: { name: "r", namespace: "n" } });
    const t = await issueToken(
      env,
      {
        namespace: "n",
        serviceAccount: "r",
        uid: sa.metadata.uid!,
        expirationSeconds: 600,
        audiences: ["x"],
      },
      { objects },
    );
    expect(await code(authenticate(req({ authorization: `Bearer ${t.token}` }), env, { objects }))).toBe(401);
    expect(
      await code(authenticate(req({ authorization: `Basic ${btoa("carol:bad")}` }), env, { objects })),
    ).toBe(401);
  });

  it("service account tokens through the union", async () => {
    const sa = objects.put("serviceaccounts", { metadata: { name: "r", namespace: "n" } });
    const t = await issueToken(
      env,
      { namespace: "n", serviceAccount: "r", uid: sa.metadata.uid!, expirationSeconds: 600 },
      { objects },
    );
    const u = await authenticate(req({ authorization: `Bearer ${t.token}` }), env, { objects });
    expect(u?.name).toBe("system:serviceaccount:n:r");
    expect(u?.groups).toEqual(["system:serviceaccounts", "system:serviceaccounts:n", "system:authenticated"]);
  });

  it("basic auth when configured; other schemes are no credentials, as upstream", async () => {
    expect(await authenticate(req({ authorization: `Basic ${btoa("carol:pw")}` }), env, { objects })).toEqual(
      {
        name: "carol",
        uid: "c1",
        groups: ["ops", "system:authenticated"],
      },
    );
    const noBasic = testEnv({ EDGEPLANE_TOKENS: env.EDGEPLANE_TOKENS });
    expect(
      await authenticate(req({ authorization: `Basic ${btoa("carol:pw")}` }), noBasic, { objects }),
    ).toBeNull();
    expect(await authenticate(req({ authorization: "Negotiate xyz" }), env, { objects })).toBeNull();
    expect(bearerToken("Bearer  spaced")).toBeUndefined();
  });

  it("a token in the WebSocket subprotocol", async () => {
    const proto = `base64url.bearer.authorization.k8s.io.${btoa("bobtok").replace(/=+$/, "")}`;
    const u = await authenticate(
      req({
        upgrade: "websocket",
        connection: "upgrade",
        "sec-websocket-protocol": `v5.channel.k8s.io, ${proto}`,
      }),
      env,
      { objects },
    );
    expect(u?.name).toBe("bob");
  });

  it("a verified client certificate wins; an unverified one is 401 unless a token checks out", async () => {
    const on = { ...env, EDGEPLANE_CLIENT_CERT_AUTH: "cloudflare" };
    const withCert = (verified: string, headers: Record<string, string> = {}) => {
      const r = req(headers);
      Object.defineProperty(r, "cf", {
        value: {
          tlsClientAuth: {
            certPresented: "1",
            certVerified: verified,
            certSubjectDN: "CN=dave,O=system:masters",
          },
        },
      });
      return r;
    };
    expect(
      await authenticate(withCert("SUCCESS", { authorization: "Bearer bobtok" }), on, { objects }),
    ).toEqual({
      name: "dave",
      uid: "",
      groups: ["system:masters", "system:authenticated"],
    });
    expect(await code(authenticate(withCert("FAILED:expired"), on, { objects }))).toBe(401);
    expect(
      (await authenticate(withCert("FAILED:expired", { authorization: "Bearer bobtok" }), on, { objects }))
        ?.name,
    ).toBe("bob");
  });

  it("remembers a verified token for the cache TTL", async () => {
    const cached = { ...env, EDGEPLANE_TOKEN_CACHE_TTL_SECONDS: "10" };
    const sa = objects.put("serviceaccounts", { metadata: { name: "r", namespace: "n" } });
    const t = await issueToken(
      cached,
      { namespace: "n", serviceAccount: "r", uid: sa.metadata.uid!, expirationSeconds: 600 },
      { objects },
    );
    let now = Date.now();
    const ctx = { env: cached, objects, now: () => now };
    expect((await authenticateToken(t.token, ctx)).name).toBe("system:serviceaccount:n:r");
    objects.remove("serviceaccounts", "n", "r");
    expect((await authenticateToken(t.token, ctx)).name).toBe("system:serviceaccount:n:r");
    now += 11_000;
    expect(await code(authenticateToken(t.token, ctx))).toBe(401);
  });
});
