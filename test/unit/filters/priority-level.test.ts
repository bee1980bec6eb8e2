// The Worker names a caller's priority level only to the front door (asked with the shared
// secret), only for a caller it authenticated, and never for one that impersonates.
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import type { UserInfo } from "../../../api/user";
import { PRIORITY_ASK_HEADER, PRIORITY_LEVEL_HEADER } from "../../../api/wire/priority";
import type { AppEnv } from "../../../workers/app-env";
import { priorityLevel } from "../../../workers/filters/priority-level";

function app(user: UserInfo, secret: string | undefined) {
  const a = new Hono<AppEnv>();
  a.use("*", async (c, next) => {
    c.set("user", user);
    await next();
  });
  a.use("*", priorityLevel());
  a.get("/ok", (c) => c.text("ok"));
  a.get("/raw", () => new Response("raw", { headers: { "x-from": "handler" } }));
  return (path: string, headers: Record<string, string> = {}) =>
    a.request(path, { headers }, { EDGEPLANE_FRONT_SECRET: secret } as unknown as AppEnv["Bindings"]);
}

const node: UserInfo = { name: "system:node:n1", uid: "", groups: ["system:nodes", "system:authenticated"] };
const alice: UserInfo = { name: "alice", uid: "", groups: ["system:authenticated"] };
const scheduler: UserInfo = { name: "system:kube-scheduler", uid: "", groups: ["system:authenticated"] };

describe("priorityLevel", () => {
  it("names the level when asked with the secret: system for nodes and the control plane, else workload", async () => {
    for (const [user, level] of [
      [node, "system"],
      [scheduler, "system"],
      [alice, "workload"],
    ] as const) {
      const r = await app(user, "s3cret")("/ok", { [PRIORITY_ASK_HEADER]: "s3cret" });
      expect([user.name, r.status, r.headers.get(PRIORITY_LEVEL_HEADER)]).toEqual([user.name, 200, level]);
    }
    // on a Response the handler made itself too, its own headers kept
    const raw = await app(node, "s3cret")("/raw", { [PRIORITY_ASK_HEADER]: "s3cret" });
    expect([raw.headers.get(PRIORITY_LEVEL_HEADER), raw.headers.get("x-from"), await raw.text()]).toEqual([
      "system",
      "handler",
      "raw",
    ]);
  });

  it("says nothing without the secret, with a wrong one, unasked, or when the caller impersonates", async () => {
    const cases: [string | undefined, Record<string, string>][] = [
      [undefined, { [PRIORITY_ASK_HEADER]: "" }],
      [undefined, { [PRIORITY_ASK_HEADER]: "anything" }],
      ["s3cret", { [PRIORITY_ASK_HEADER]: "guess" }],
      ["s3cret", { [PRIORITY_ASK_HEADER]: "s3cret, s3cret" }],
      ["s3cret", {}],
      ["s3cret", { [PRIORITY_ASK_HEADER]: "s3cret", "impersonate-user": "system:node:n2" }],
    ];
    for (const [secret, headers] of cases) {
      const r = await app(node, secret)("/ok", headers);
      expect([headers, r.status, r.headers.get(PRIORITY_LEVEL_HEADER)]).toEqual([headers, 200, null]);
    }
  });
});
