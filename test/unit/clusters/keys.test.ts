// Cluster keys and environments (durable-objects/clusters.ts): a child cluster's settings are
// the root's minus every credential and policy of the root, and a Durable Object finds its
// cluster by its own name.
import { describe, expect, it } from "vitest";
import {
  childClusterKey,
  childEnv,
  clusterNameOf,
  isClusterName,
  objectEnv,
} from "../../../durable-objects/clusters";
import type { Env } from "../../../durable-objects/env";

const root = {
  EDGEPLANE_CLUSTER: "default",
  EDGEPLANE_TOKENS: "secret,admin,1,system:masters",
  EDGEPLANE_SA_SIGNING_KEY: "{}",
  EDGEPLANE_SA_ISSUER: "https://issuer.example",
  EDGEPLANE_CLIENT_CERT_AUTH: "front",
  EDGEPLANE_AUTHORIZATION_MODES: "AlwaysAllow",
  EDGEPLANE_ABAC_POLICY: "{}",
  EDGEPLANE_OIDC_ISSUER_URL: "https://oidc.example",
  EDGEPLANE_APISERVER_ADDRESS: "127.0.0.1:8787",
  EDGEPLANE_SERVICE_CIDR: "10.96.0.0/12",
  EDGEPLANE_CA_KEY: "-----BEGIN PRIVATE KEY-----",
} as unknown as Env;

const state = (name?: string) => ({ id: { name } }) as unknown as DurableObjectState;

describe("cluster keys", () => {
  it("takes DNS-1123 labels as names, nothing else", () => {
    for (const ok of ["a", "team-a", "x1", "a".repeat(63)]) expect(isClusterName(ok), ok).toBe(true);
    for (const bad of ["", "A", "a.b", "-a", "a-", "a/b", "..", "a%2Fb", "a".repeat(64)])
      expect(isClusterName(bad), bad).toBe(false);
  });

  it("gives a child its own key, issuer and authorizers, and none of the root's credentials", () => {
    const key = childClusterKey("default", "team-a", "u1");
    const env = childEnv(root, key) as unknown as Record<string, unknown>;
    expect(env.EDGEPLANE_CLUSTER).toBe("default@team-a@u1");
    expect(clusterNameOf(env as unknown as Env)).toBe("team-a");
    expect(clusterNameOf(root)).toBeUndefined();
    expect(env.EDGEPLANE_SA_ISSUER).toBe("https://issuer.example/clusters/team-a");
    expect(env.EDGEPLANE_AUTHORIZATION_MODES).toBe("Node,RBAC");
    for (const k of [
      "EDGEPLANE_TOKENS",
      "EDGEPLANE_SA_SIGNING_KEY",
      "EDGEPLANE_CLIENT_CERT_AUTH",
      "EDGEPLANE_ABAC_POLICY",
      "EDGEPLANE_OIDC_ISSUER_URL",
      "EDGEPLANE_CA_KEY",
    ])
      expect(env[k], k).toBeUndefined();
    // every cluster's nodes dial the same apiserver address (their relays name the cluster)
    expect(env.EDGEPLANE_APISERVER_ADDRESS).toBe("127.0.0.1:8787");
    expect(env.EDGEPLANE_SERVICE_CIDR).toBe("10.96.0.0/12");
    // kept: the same object for the same key
    expect(childEnv(root, key)).toBe(env);
  });

  it("reads a Durable Object's cluster off its name", () => {
    expect(objectEnv(state("default/apps/deployments"), root)).toBe(root);
    expect(objectEnv(state("default"), root)).toBe(root);
    expect(objectEnv(state(undefined), root)).toBe(root);
    // a shard, a node tunnel, the controller manager of a child
    const key = "default@b@u2";
    expect(objectEnv(state(`${key}//pods`), root).EDGEPLANE_CLUSTER).toBe(key);
    expect(objectEnv(state(`${key}/node-1`), root).EDGEPLANE_CLUSTER).toBe(key);
    expect(objectEnv(state(key), root).EDGEPLANE_CLUSTER).toBe(key);
    // another root's objects, and malformed keys, stay the root's
    expect(objectEnv(state("other@b@u2/x"), root)).toBe(root);
    expect(objectEnv(state("default@b/x"), root)).toBe(root);
  });
});
