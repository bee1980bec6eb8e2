import { describe, expect, it } from "vitest";
import { StatusError } from "../../../api/errors";
import type { UserInfo } from "../../../api/user";
import { type ImpersonationAttributes, impersonate } from "../../../workers/authn/impersonate";

const alice: UserInfo = { name: "alice", uid: "a1", groups: ["devs", "system:authenticated"] };
const req = (headers: [string, string][]) => {
  const h = new Headers();
  for (const [k, v] of headers) h.append(k, v);
  return new Request("https://x/api/v1/pods", { headers: h });
};

function recorder(deny?: (a: ImpersonationAttributes) => boolean) {
  const asked: ImpersonationAttributes[] = [];
  return {
    asked,
    authorize: (a: ImpersonationAttributes) => {
      asked.push(a);
      return deny?.(a) ? { allowed: false } : { allowed: true };
    },
  };
}

async function status(p: Promise<unknown>) {
  try {
    await p;
  } catch (e) {
    if (e instanceof StatusError) return e.toStatus();
    throw e;
  }
  throw new Error("expected a StatusError");
}

describe("impersonation", () => {
  it("leaves the user alone without headers", async () => {
    const r = recorder();
    expect(await impersonate(req([]), alice, r.authorize)).toBe(alice);
    expect(r.asked).toEqual([]);
  });

  it("impersonates a user with groups, uid and extras, asking for each", async () => {
    const r = recorder();
    const u = await impersonate(
      req([
        ["Impersonate-User", "bob"],
        ["Impersonate-Group", "g1"],
        ["Impersonate-Group", "g2"],
        ["Impersonate-Uid", "b-1"],
        ["Impersonate-Extra-Scopes", "view"],
        ["Impersonate-Extra-acme.com%2Fproject", "p1"],
      ]),
      alice,
      r.authorize,
    );
    expect(u).toEqual({
      name: "bob",
      uid: "b-1",
      groups: ["g1", "g2", "system:authenticated"],
      extra: { scopes: ["view"], "acme.com/project": ["p1"] },
    });
    expect(r.asked.map((a) => [a.resource, a.subresource, a.name, a.apiGroup])).toEqual([
      ["users", "", "bob", ""],
      ["groups", "", "g1", ""],
      ["groups", "", "g2", ""],
      // (header order: Fetch sorts header names; Go's map order is random anyway)
      ["userextras", "acme.com/project", "p1", "authentication.k8s.io"],
      ["userextras", "scopes", "view", "authentication.k8s.io"],
      ["uids", "", "b-1", "authentication.k8s.io"],
    ]);
    expect(r.asked.every((a) => a.verb === "impersonate" && a.user === alice)).toBe(true);
  });

  it("gives a service account its groups unless groups are given", async () => {
    const r = recorder();
    const u = await impersonate(
      req([["Impersonate-User", "system:serviceaccount:ns1:robot"]]),
      alice,
      r.authorize,
    );
    expect(u.groups).toEqual([
      "system:serviceaccounts",
      "system:serviceaccounts:ns1",
      "system:authenticated",
    ]);
    expect(r.asked[0]).toMatchObject({ resource: "serviceaccounts", namespace: "ns1", name: "robot" });
    const g = await impersonate(
      req([
        ["Impersonate-User", "system:serviceaccount:ns1:robot"],
        ["Impersonate-Group", "system:unauthenticated"],
      ]),
      alice,
      recorder().authorize,
    );
    expect(g.groups).toEqual(["system:unauthenticated"]);
    const bad = await impersonate(
      req([["Impersonate-User", "system:serviceaccount:NS:x:y"]]),
      alice,
      r.authorize,
    );
    expect(bad.groups).toEqual(["system:authenticated"]);
  });

  it("anonymous gets system:unauthenticated", async () => {
    const u = await impersonate(req([["Impersonate-User", "system:anonymous"]]), alice, recorder().authorize);
    expect(u.groups).toEqual(["system:unauthenticated"]);
  });

  it("is 403 with upstream's message when an item is not allowed", async () => {
    const s = await status(
      impersonate(
        req([
          ["Impersonate-User", "bob"],
          ["Impersonate-Group", "system:masters"],
        ]),
        alice,
        recorder((a) => a.resource === "groups").authorize,
      ),
    );
    expect(s).toMatchObject({
      code: 403,
      reason: "Forbidden",
      message:
        'groups "system:masters" is forbidden: User "alice" cannot impersonate resource "groups" in API group "" at the cluster scope',
      details: { name: "system:masters", kind: "groups" },
    });
    const sa = await status(
      impersonate(req([["Impersonate-User", "system:serviceaccount:ns1:robot"]]), alice, () => false),
    );
    expect(sa.message).toBe(
      'serviceaccounts "robot" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ns1"',
    );
    const ex = await status(
      impersonate(
        req([
          ["Impersonate-User", "bob"],
          ["Impersonate-Extra-scopes", "view"],
        ]),
        alice,
        (a) => ({
          allowed: a.resource !== "userextras",
          reason: "no",
        }),
      ),
    );
    expect(ex.message).toBe(
      'userextras.authentication.k8s.io "view" is forbidden: User "alice" cannot impersonate resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope: no',
    );
  });

  it("is an internal error to impersonate groups without a user", async () => {
    const s = await status(impersonate(req([["Impersonate-Group", "g1"]]), alice, () => true));
    expect(s).toMatchObject({
      code: 500,
      reason: "InternalError",
      message: "Internal error occurred: requested [{Group  g1    }] without impersonating a user",
    });
  });
});
