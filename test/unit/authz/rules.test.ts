import { describe, expect, it } from "vitest";
import {
  appliesTo,
  compactString,
  covers,
  escalationMessage,
  type PolicyRule,
  type RuleRequest,
  ruleAllows,
} from "../../../api/rbac/rules";

const res = (verb: string, resource: string, extra: Partial<RuleRequest> = {}): RuleRequest => ({
  verb,
  isResourceRequest: true,
  apiGroup: "",
  resource,
  subresource: "",
  name: "",
  ...extra,
});
const url = (verb: string, path: string): RuleRequest => ({ verb, isResourceRequest: false, path });

describe("rule matching", () => {
  const podsRead: PolicyRule = { verbs: ["get", "list"], apiGroups: [""], resources: ["pods"] };

  it("matches verb, group and resource exactly", () => {
    expect(ruleAllows(res("get", "pods"), podsRead)).toBe(true);
    expect(ruleAllows(res("delete", "pods"), podsRead)).toBe(false);
    expect(ruleAllows(res("get", "pods", { apiGroup: "apps" }), podsRead)).toBe(false);
    expect(ruleAllows(res("get", "services"), podsRead)).toBe(false);
  });

  it("does not let a resource rule match its subresources", () => {
    expect(ruleAllows(res("get", "pods", { subresource: "log" }), podsRead)).toBe(false);
    const withLog: PolicyRule = { verbs: ["get"], apiGroups: [""], resources: ["pods/log"] };
    expect(ruleAllows(res("get", "pods", { subresource: "log" }), withLog)).toBe(true);
    expect(ruleAllows(res("get", "pods"), withLog)).toBe(false);
  });

  it("understands * for verbs, groups and resources, and */subresource", () => {
    const all: PolicyRule = { verbs: ["*"], apiGroups: ["*"], resources: ["*"] };
    expect(ruleAllows(res("escalate", "roles", { apiGroup: "rbac.authorization.k8s.io" }), all)).toBe(true);
    expect(ruleAllows(res("get", "pods", { subresource: "status" }), all)).toBe(true);
    const anyStatus: PolicyRule = { verbs: ["update"], apiGroups: ["*"], resources: ["*/status"] };
    expect(
      ruleAllows(res("update", "deployments", { apiGroup: "apps", subresource: "status" }), anyStatus),
    ).toBe(true);
    expect(
      ruleAllows(res("update", "deployments", { apiGroup: "apps", subresource: "scale" }), anyStatus),
    ).toBe(false);
    expect(ruleAllows(res("update", "deployments", { apiGroup: "apps" }), anyStatus)).toBe(false);
  });

  it("restricts by resourceNames; a nameless request (list, create) does not match named rules", () => {
    const one: PolicyRule = {
      verbs: ["get", "list", "create"],
      apiGroups: [""],
      resources: ["configmaps"],
      resourceNames: ["a"],
    };
    expect(ruleAllows(res("get", "configmaps", { name: "a" }), one)).toBe(true);
    expect(ruleAllows(res("get", "configmaps", { name: "b" }), one)).toBe(false);
    expect(ruleAllows(res("list", "configmaps"), one)).toBe(false);
    expect(ruleAllows(res("create", "configmaps"), one)).toBe(false);
  });

  it("matches non-resource URLs exactly, by trailing-* prefix, and * for all", () => {
    const r: PolicyRule = { verbs: ["get"], nonResourceURLs: ["/healthz", "/apis/*"] };
    expect(ruleAllows(url("get", "/healthz"), r)).toBe(true);
    expect(ruleAllows(url("get", "/healthz/etcd"), r)).toBe(false);
    expect(ruleAllows(url("get", "/apis/apps/v1"), r)).toBe(true);
    expect(ruleAllows(url("get", "/apis"), r)).toBe(false);
    expect(ruleAllows(url("post", "/healthz"), r)).toBe(false);
    expect(ruleAllows(url("get", "/anything"), { verbs: ["*"], nonResourceURLs: ["*"] })).toBe(true);
    // resource rules never allow non-resource requests and the reverse
    expect(ruleAllows(url("get", "/healthz"), { verbs: ["*"], apiGroups: ["*"], resources: ["*"] })).toBe(
      false,
    );
    expect(ruleAllows(res("get", "pods"), { verbs: ["*"], nonResourceURLs: ["*"] })).toBe(false);
  });
});

describe("subjects", () => {
  const alice = { name: "alice", groups: ["devs", "system:authenticated"] };
  const sa = { name: "system:serviceaccount:ns1:builder", groups: ["system:serviceaccounts"] };

  it("matches users by name and groups by membership, returning the first index", () => {
    expect(
      appliesTo(alice, [
        { kind: "User", name: "bob" },
        { kind: "User", name: "alice" },
      ]),
    ).toBe(1);
    expect(appliesTo(alice, [{ kind: "Group", name: "devs" }])).toBe(0);
    expect(
      appliesTo(alice, [
        { kind: "Group", name: "ops" },
        { kind: "User", name: "Alice" },
      ]),
    ).toBe(-1);
    expect(appliesTo(alice, undefined)).toBe(-1);
  });

  it("matches service accounts, defaulting the namespace to the binding's", () => {
    expect(appliesTo(sa, [{ kind: "ServiceAccount", name: "builder", namespace: "ns1" }])).toBe(0);
    expect(appliesTo(sa, [{ kind: "ServiceAccount", name: "builder" }], "ns1")).toBe(0);
    expect(appliesTo(sa, [{ kind: "ServiceAccount", name: "builder" }], "ns2")).toBe(-1);
    expect(appliesTo(sa, [{ kind: "ServiceAccount", name: "builder" }])).toBe(-1);
    expect(appliesTo(alice, [{ kind: "ServiceAccount", name: "alice", namespace: "ns1" }])).toBe(-1);
  });
});

describe("covers", () => {
  it("holds when every verb/resource/name of the request is held", () => {
    const owner: PolicyRule[] = [
      { verbs: ["get", "list", "watch"], apiGroups: [""], resources: ["pods", "services"] },
    ];
    expect(covers(owner, [{ verbs: ["get", "list"], apiGroups: [""], resources: ["pods"] }]).covers).toBe(
      true,
    );
    const r = covers(owner, [{ verbs: ["get", "create"], apiGroups: [""], resources: ["pods", "secrets"] }]);
    expect(r.covers).toBe(false);
    expect(r.missing).toEqual([
      { apiGroups: [""], resources: ["pods"], verbs: ["create"] },
      { apiGroups: [""], resources: ["secrets"], verbs: ["get"] },
      { apiGroups: [""], resources: ["secrets"], verbs: ["create"] },
    ]);
  });

  it("treats stars, */subresource and resource names as upstream", () => {
    const admin: PolicyRule[] = [{ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }];
    expect(
      covers(admin, [{ verbs: ["escalate"], apiGroups: ["x"], resources: ["y/z"], resourceNames: ["n"] }])
        .covers,
    ).toBe(true);
    // a rule with resource names does not cover an unrestricted one, the reverse holds
    const named: PolicyRule[] = [
      { verbs: ["get"], apiGroups: [""], resources: ["secrets"], resourceNames: ["a"] },
    ];
    expect(covers(named, [{ verbs: ["get"], apiGroups: [""], resources: ["secrets"] }]).covers).toBe(false);
    expect(
      covers(named, [{ verbs: ["get"], apiGroups: [""], resources: ["secrets"], resourceNames: ["a"] }])
        .covers,
    ).toBe(true);
    expect(
      covers(
        [{ verbs: ["get"], apiGroups: [""], resources: ["secrets"] }],
        [{ verbs: ["get"], apiGroups: [""], resources: ["secrets"], resourceNames: ["a", "b"] }],
      ).covers,
    ).toBe(true);
    const status: PolicyRule[] = [{ verbs: ["get"], apiGroups: ["apps"], resources: ["*/status"] }];
    expect(
      covers(status, [{ verbs: ["get"], apiGroups: ["apps"], resources: ["deployments/status"] }]).covers,
    ).toBe(true);
    expect(covers(status, [{ verbs: ["get"], apiGroups: ["apps"], resources: ["deployments"] }]).covers).toBe(
      false,
    );
  });

  it("compares non-resource URLs with trailing-* prefixes", () => {
    const owner: PolicyRule[] = [{ verbs: ["get"], nonResourceURLs: ["/apis/*"] }];
    expect(covers(owner, [{ verbs: ["get"], nonResourceURLs: ["/apis/apps"] }]).covers).toBe(true);
    expect(covers(owner, [{ verbs: ["get"], nonResourceURLs: ["/api"] }]).covers).toBe(false);
    expect(covers(owner, [{ verbs: ["get"], nonResourceURLs: ["/apis/*"] }]).covers).toBe(true);
    // a resource rule never covers a URL
    expect(
      covers(
        [{ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }],
        [{ verbs: ["get"], nonResourceURLs: ["/x"] }],
      ).covers,
    ).toBe(false);
  });

  it("words the escalation error as upstream, verbs compacted per resource and lines sorted", () => {
    const missing = covers(
      [],
      [{ verbs: ["get", "create"], apiGroups: [""], resources: ["secrets", "pods"] }],
    ).missing;
    expect(escalationMessage({ name: "alice", groups: ["group-x", "system:authenticated"] }, missing)).toBe(
      'user "alice" (groups=["group-x" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n' +
        '{APIGroups:[""], Resources:["pods"], Verbs:["get" "create"]}\n' +
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "create"]}',
    );
    expect(compactString({ verbs: ["get"], nonResourceURLs: ["/x"] })).toBe(
      '{NonResourceURLs:["/x"], Verbs:["get"]}',
    );
    expect(compactString({ verbs: ["get"], apiGroups: [""], resources: ["s"], resourceNames: ["a"] })).toBe(
      '{APIGroups:[""], Resources:["s"], ResourceNames:["a"], Verbs:["get"]}',
    );
  });
});
