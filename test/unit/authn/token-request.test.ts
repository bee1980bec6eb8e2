import { decodeJwt } from "jose";
import { beforeEach, describe, expect, it } from "vitest";
import { StatusError } from "../../../api/errors";
import { resetSigningKeys } from "../../../workers/authn/keys";
import { DEFAULT_ISSUER, serviceAccountTokens } from "../../../workers/authn/serviceaccount";
import { tokenRequest } from "../../../workers/authn/token-request";
import { FakeObjects, testEnv } from "./fake-objects";

let objects: FakeObjects;
let env: ReturnType<typeof testEnv>;
let sa: ReturnType<FakeObjects["put"]>;
const ref = { namespace: "ns1", name: "robot" };

beforeEach(() => {
  resetSigningKeys();
  objects = new FakeObjects();
  env = testEnv();
  sa = objects.put("serviceaccounts", { metadata: { name: "robot", namespace: "ns1" } });
});

async function statusOf(p: Promise<unknown>) {
  try {
    await p;
  } catch (e) {
    if (e instanceof StatusError) return e.toStatus();
    throw e;
  }
  throw new Error("expected a StatusError");
}

describe("TokenRequest", () => {
  it("defaults to one hour and the API audiences, and returns a working token", async () => {
    const now = Date.parse("2026-01-02T03:04:05.678Z");
    const tr = await tokenRequest(
      env,
      ref,
      { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: {} },
      { objects, now: () => now },
    );
    expect(tr).toMatchObject({
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      metadata: { name: "robot", namespace: "ns1", creationTimestamp: "2026-01-02T03:04:05Z" },
      spec: { audiences: [DEFAULT_ISSUER], expirationSeconds: 3600 },
      status: { expirationTimestamp: "2026-01-02T04:04:05Z" },
    });
    const claims = decodeJwt(tr.status.token);
    expect(claims.exp).toBe(Math.floor(now / 1000) + 3600);
    const user = await serviceAccountTokens(tr.status.token, { env, objects, now: () => now });
    expect(user?.name).toBe("system:serviceaccount:ns1:robot");
    expect(user?.uid).toBe(sa.metadata.uid);
  });

  it("accepts an empty body (kubectl create token sends a spec only)", async () => {
    const tr = await tokenRequest(env, ref, undefined, { objects });
    expect(tr.spec.expirationSeconds).toBe(3600);
    expect(typeof tr.status.token).toBe("string");
  });

  it("refuses less than 10 minutes and more than 2^32 seconds, as upstream words it", async () => {
    const s = await statusOf(tokenRequest(env, ref, { spec: { expirationSeconds: 60 } }, { objects }));
    expect(s).toMatchObject({
      code: 422,
      reason: "Invalid",
      message:
        'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes',
    });
    const big = await statusOf(
      tokenRequest(env, ref, { spec: { expirationSeconds: 2 ** 32 + 1 } }, { objects }),
    );
    expect(big.message).toContain("may not specify a duration larger than 2^32 seconds");
    const ok = await tokenRequest(env, ref, { spec: { expirationSeconds: 600 } }, { objects });
    expect(ok.spec.expirationSeconds).toBe(600);
  });

  it("names must match the URL; the service account must exist", async () => {
    const s = await statusOf(tokenRequest(env, ref, { metadata: { name: "other" }, spec: {} }, { objects }));
    expect(s.message).toBe(
      'TokenRequest.authentication.k8s.io "robot" is invalid: metadata.name: Invalid value: "other": must match the service account name if specified',
    );
    const nf = await statusOf(tokenRequest(env, { namespace: "ns1", name: "ghost" }, {}, { objects }));
    expect(nf).toMatchObject({ code: 404, reason: "NotFound", message: 'serviceaccounts "ghost" not found' });
  });

  it("binds to a pod of the same service account, with its node; refuses another's pod or a stale uid", async () => {
    const node = objects.put("nodes", { metadata: { name: "n1" } });
    const pod = objects.put("pods", {
      metadata: { name: "p", namespace: "ns1" },
      spec: { serviceAccountName: "robot", nodeName: "n1" },
    });
    const tr = await tokenRequest(
      env,
      ref,
      {
        spec: {
          audiences: ["a"],
          boundObjectRef: { apiVersion: "v1", kind: "Pod", name: "p", uid: pod.metadata.uid },
        },
      },
      { objects },
    );
    expect(decodeJwt(tr.status.token)["kubernetes.io"]).toMatchObject({
      pod: { name: "p", uid: pod.metadata.uid },
      node: { name: "n1", uid: node.metadata.uid },
    });
    expect(decodeJwt(tr.status.token).aud).toEqual(["a"]);
    objects.put("pods", {
      metadata: { name: "q", namespace: "ns1" },
      spec: { serviceAccountName: "default" },
    });
    const other = await statusOf(
      tokenRequest(
        env,
        ref,
        { spec: { boundObjectRef: { apiVersion: "v1", kind: "Pod", name: "q" } } },
        { objects },
      ),
    );
    expect(other).toMatchObject({
      code: 400,
      message:
        'cannot bind token for serviceaccount "robot" to pod running with different serviceaccount name.',
    });
    const stale = await statusOf(
      tokenRequest(
        env,
        ref,
        { spec: { boundObjectRef: { apiVersion: "v1", kind: "Pod", name: "p", uid: "old" } } },
        { objects },
      ),
    );
    expect(stale.code).toBe(409);
    expect(stale.message).toContain(
      "the UID in the bound object reference (old) does not match the UID in record",
    );
    const kind = await statusOf(
      tokenRequest(
        env,
        ref,
        { spec: { boundObjectRef: { apiVersion: "apps/v1", kind: "Deployment", name: "d" } } },
        { objects },
      ),
    );
    expect(kind).toMatchObject({
      code: 400,
      message: "cannot bind token to object of type apps/v1, Kind=Deployment",
    });
  });

  it("shortens to the configured maximum with a warning", async () => {
    env.EDGEPLANE_SA_MAX_TOKEN_EXPIRATION_SECONDS = "7200";
    const warnings: string[] = [];
    const tr = await tokenRequest(
      env,
      ref,
      { spec: { expirationSeconds: 86400 } },
      { objects, warn: (w) => warnings.push(w) },
    );
    expect(tr.spec.expirationSeconds).toBe(7200);
    expect(warnings).toEqual(["requested expiration of 86400 seconds shortened to 7200 seconds"]);
  });
});
