// Legacy service account token Secrets through the real apiserver (workerd) and real kubectl:
// the tokens controller fills them, their token authenticates as the account while the Secret
// lives, and Secrets without their account are deleted.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { freshNamespace, hasKubectl, kubectl, shared, until } from "../helpers/cluster";

const t = shared();

function kubeconfigCA(): string {
  const m = /certificate-authority-data:\s*(\S+)/.exec(readFileSync(t.kubeconfigPath, "utf8"));
  if (!m) throw new Error("no certificate-authority-data in the kubeconfig");
  return Buffer.from(m[1], "base64").toString("utf8");
}

const tokenSecret = (name: string, sa: string) => `apiVersion: v1
kind: Secret
metadata:
  name: ${name}
  annotations:
    kubernetes.io/service-account.name: ${sa}
type: kubernetes.io/service-account-token
`;

const decode = (b64: string | undefined) => Buffer.from(b64 ?? "", "base64").toString("utf8");

async function getJson(ns: string, ...what: string[]): Promise<any> {
  const r = await kubectl(t, ["-n", ns, "get", ...what, "-o", "json"]);
  return r.code === 0 ? JSON.parse(r.stdout) : undefined;
}

describe.skipIf(!hasKubectl)("service account token Secrets", () => {
  it("are filled with a token that works while the Secret exists, and refused after", async () => {
    const ns = await freshNamespace(t, "legacy");
    expect((await kubectl(t, ["-n", ns, "create", "serviceaccount", "robot"])).code).toBe(0);
    const made = await kubectl(t, ["-n", ns, "apply", "-f", "-"], {
      input: tokenSecret("robot-token", "robot"),
    });
    expect(made.stderr).toBe("");
    const secret = await until("the token filled in", async () => {
      const s = await getJson(ns, "secret", "robot-token");
      return s?.data?.token && s;
    });
    const sa = await getJson(ns, "serviceaccount", "robot");
    expect(secret.metadata.annotations["kubernetes.io/service-account.uid"]).toBe(sa.metadata.uid);
    expect(decode(secret.data.namespace)).toBe(ns);
    expect(decode(secret.data["ca.crt"])).toBe(kubeconfigCA());

    const token = decode(secret.data.token);
    const who = await kubectl(t, [`--token=${token}`, "auth", "whoami", "-o", "json"]);
    expect(who.stderr).toBe("");
    expect(JSON.parse(who.stdout).status.userInfo).toMatchObject({
      username: `system:serviceaccount:${ns}:robot`,
      uid: sa.metadata.uid,
      groups: expect.arrayContaining(["system:serviceaccounts", `system:serviceaccounts:${ns}`]),
    });

    expect((await kubectl(t, ["-n", ns, "delete", "secret", "robot-token"])).code).toBe(0);
    // refused once the Secret is gone (a verified token may be remembered for 10 s, as upstream)
    const refused = await until(
      "the token refused",
      async () => {
        const r = await kubectl(t, [`--token=${token}`, "auth", "whoami"]);
        return r.code !== 0 && r;
      },
      30_000,
      500,
    );
    expect(refused.stderr).toContain("Unauthorized");
  }, 60_000);

  it("deletes a Secret naming no existing account, and an account's Secrets with it", async () => {
    const ns = await freshNamespace(t, "legacy");
    const ghost = await kubectl(t, ["-n", ns, "apply", "-f", "-"], {
      input: tokenSecret("ghost-token", "ghost"),
    });
    expect(ghost.code).toBe(0);
    await until(
      "the Secret for no account deleted",
      async () => !(await getJson(ns, "secret", "ghost-token")),
    );

    expect((await kubectl(t, ["-n", ns, "create", "serviceaccount", "robot"])).code).toBe(0);
    await kubectl(t, ["-n", ns, "apply", "-f", "-"], { input: tokenSecret("robot-token", "robot") });
    await until("the token filled in", async () => (await getJson(ns, "secret", "robot-token"))?.data?.token);
    expect((await kubectl(t, ["-n", ns, "delete", "serviceaccount", "robot"])).code).toBe(0);
    await until("the account's Secret deleted", async () => !(await getJson(ns, "secret", "robot-token")));
  }, 60_000);
});
