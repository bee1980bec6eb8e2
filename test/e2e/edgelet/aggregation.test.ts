// API aggregation end to end (issue 32 item 3): an extension API server in a pod on a real
// containerd node (socat + openssl terminating TLS in front of a busybox sh script,
// wardle-server.sh), a Service in front of it, and an APIService naming the Service with the
// server's CA. The availability controller's discovery check passes through the node's tunnel,
// and then `kubectl get flunders` goes kubectl -> apiserver (authn, authz) -> NodeTunnel ->
// edgelet -> HTTPS to the pod, carrying the user in X-Remote-User/X-Remote-Group. A user RBAC
// refuses never reaches the backend; with the Service gone the APIService is
// Available=False ServiceNotFound and requests are 503 "service unavailable".
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, hasKubectl, kubectl } from "../../helpers/cluster";
import { available, waitFor, withEdgeletNode } from "./harness";

const HTTPS_IMAGE = "127.0.0.1:5000/edgeplane/https:1";
const hasOpenssl = (() => {
  try {
    execFileSync("openssl", ["version"]);
    return true;
  } catch {
    return false;
  }
})();
const httpsImage = async () => {
  try {
    const r = await fetch("http://127.0.0.1:5000/v2/edgeplane/https/manifests/1", {
      method: "HEAD",
      headers: { accept: "application/vnd.oci.image.manifest.v1+json" },
    });
    return r.ok;
  } catch {
    return false;
  }
};
const hasImage = available && (await httpsImage());
if (available && !hasImage)
  console.warn(
    "\n*** SKIPPED: aggregation e2e: no edgeplane/https image in the local registry (npm run setup:containerd) ***\n",
  );

const NODE = `aggr-e2e-${Math.random().toString(36).slice(2, 7)}`;
const GROUP = "wardle.example.com";
const VERSION = "v1alpha1";
const APISERVICE = `${VERSION}.${GROUP}`;

/** A CA and a server certificate for <service>.<namespace>.svc, made with openssl. */
function certificates(dir: string, dnsName: string): { ca: string; serverPem: string } {
  const run = (args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  run(
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      "ca.key",
      "-out",
      "ca.crt",
      "-days",
      "1",
    ].concat(["-subj", "/CN=wardle-test-ca"]),
  );
  run([
    "req",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    "srv.key",
    "-out",
    "srv.csr",
    "-subj",
    "/CN=wardle",
  ]);
  writeFileSync(join(dir, "ext.cnf"), `subjectAltName=DNS:${dnsName}\n`);
  run(
    ["x509", "-req", "-in", "srv.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial"].concat([
      "-out",
      "srv.crt",
      "-days",
      "1",
      "-extfile",
      "ext.cnf",
    ]),
  );
  const read = (f: string) => readFileSync(join(dir, f), "utf8");
  return { ca: read("ca.crt"), serverPem: read("srv.key") + read("srv.crt") };
}

describe.skipIf(!available || !hasKubectl || !hasOpenssl || !hasImage)(
  "API aggregation to an extension server on a containerd node",
  () => {
    const suite = withEdgeletNode(NODE, "aggr");
    const k = (args: string[], input?: string) =>
      kubectl(suite.server, args, input === undefined ? {} : { input });
    const tmp = mkdtempSync(join(tmpdir(), "edgeplane-aggr-"));
    afterAll(() => rmSync(tmp, { recursive: true, force: true }));
    let ns: string;
    let ca: string;

    const condition = async () => {
      const r = await api(suite.server, "GET", `/apis/apiregistration.k8s.io/v1/apiservices/${APISERVICE}`);
      return (r.json?.status?.conditions ?? []).find((c: any) => c.type === "Available");
    };
    const waitCondition = (status: string, reason: string) =>
      waitFor(
        `APIService ${APISERVICE} Available=${status} (${reason})`,
        async () => {
          const c = await condition();
          return c?.status === status && c?.reason === reason ? c : undefined;
        },
        90_000,
        300,
      ).catch(async (e) => {
        const pods = await api(suite.server, "GET", `/api/v1/namespaces/${ns}/pods`);
        throw new Error(
          `${e.message}\nlast condition: ${JSON.stringify(await condition())}\npods: ${JSON.stringify(
            (pods.json?.items ?? []).map((p: any) => p.status),
          )}\nedgelet:\n${suite.edgelet.output.slice(-3000)}`,
        );
      });

    beforeAll(async () => {
      ns = suite.ns;
      const certs = certificates(tmp, `wardle.${ns}.svc`);
      ca = certs.ca;
      const handler = readFileSync(new URL("./wardle-server.sh", import.meta.url), "utf8");
      const pod = await api(suite.server, "POST", `/api/v1/namespaces/${ns}/pods`, {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "wardle", labels: { app: "wardle" } },
        spec: {
          terminationGracePeriodSeconds: 0,
          containers: [
            {
              name: "server",
              image: HTTPS_IMAGE,
              env: [
                { name: "TLS_PEM", value: certs.serverPem },
                { name: "HANDLER", value: handler },
              ],
              command: [
                "sh",
                "-c",
                'printf "%s" "$TLS_PEM" > /tmp/server.pem && printf "%s" "$HANDLER" > /tmp/handler.sh && ' +
                  "exec socat OPENSSL-LISTEN:8443,reuseaddr,fork,cert=/tmp/server.pem,verify=0 SYSTEM:'sh /tmp/handler.sh'",
              ],
              ports: [{ containerPort: 8443, name: "https" }],
              readinessProbe: { tcpSocket: { port: 8443 }, periodSeconds: 1 },
            },
          ],
        },
      });
      expect(pod.status, pod.text).toBe(201);
      const svc = await k(["create", "service", "clusterip", "wardle", "--tcp=443:8443", "-n", ns]);
      expect(svc.code, svc.stderr).toBe(0);
      // kubectl names the port "443-8443"; the pod's label is the selector
      const sel = await k(["set", "selector", "service/wardle", "app=wardle", "-n", ns]);
      expect(sel.code, sel.stderr).toBe(0);
      const apply = await k(
        ["apply", "-f", "-"],
        `apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: ${APISERVICE}
spec:
  group: ${GROUP}
  version: ${VERSION}
  groupPriorityMinimum: 1000
  versionPriority: 15
  caBundle: ${Buffer.from(ca).toString("base64")}
  service:
    namespace: ${ns}
    name: wardle
    port: 443
`,
      );
      expect(apply.code, apply.stderr).toBe(0);
      await waitCondition("True", "Passed");
    }, 240_000);

    it("kubectl get of the aggregated resource reaches the pod through the node tunnel, as the user", async () => {
      const who = await k(["auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"]);
      expect(who.code, who.stderr).toBe(0);
      const r = await k(["get", "flunders", "-n", ns]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^NAME\\s+SEEN-BY\\s*\\nflunder-one\\s+${who.stdout}\\s*$`, "m"));
      // the object itself: the backend was told the user's groups too
      const o = await k(["get", "flunders", "-n", ns, "-o", "json"]);
      expect(o.code, o.stderr).toBe(0);
      const item = JSON.parse(o.stdout).items[0];
      expect(item.metadata.name).toBe("flunder-one");
      expect(item.metadata.annotations["seen-user"]).toBe(who.stdout);
      expect(item.metadata.annotations["seen-groups"].split(",")).toContain("system:authenticated");
      // the short name from the backend's discovery works, and kubectl sees the group
      const fl = await k(["get", "fl", "-n", ns, "-o", "name"]);
      expect(fl.code, fl.stderr).toBe(0);
      expect(fl.stdout.trim()).toBe(`flunder.${GROUP}/flunder-one`);
      const res = await k(["api-resources", `--api-group=${GROUP}`, "--no-headers"]);
      expect(res.code, res.stderr).toBe(0);
      expect(res.stdout).toMatch(/^flunders\s+fl\s+wardle\.example\.com\/v1alpha1\s+true\s+Flunder\s*$/m);
      // and the APIService as kubectl lists it
      const as = await k(["get", "apiservice", APISERVICE]);
      expect(as.stdout).toMatch(
        new RegExp(`^${APISERVICE.replace(/\./g, "\\.")}\\s+${ns}/wardle\\s+True\\s+\\S+$`, "m"),
      );
    });

    it("a watch streams through: each event arrives as the backend sends it", async () => {
      const started = Date.now();
      const res = await fetch(
        `${suite.server.url}/apis/${GROUP}/${VERSION}/namespaces/${ns}/flunders?watch=1`,
        {
          headers: { authorization: `Bearer ${suite.server.token}` },
        },
      );
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      const arrivals: { at: number; text: string }[] = [];
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += new TextDecoder().decode(value);
        let nl = buf.indexOf("\n");
        while (nl >= 0) {
          arrivals.push({ at: Date.now() - started, text: buf.slice(0, nl) });
          buf = buf.slice(nl + 1);
          nl = buf.indexOf("\n");
        }
      }
      expect(arrivals.map((a) => JSON.parse(a.text).object.metadata.name)).toEqual([
        "flunder-one",
        "flunder-two",
      ]);
      // the first event was passed on before the backend sent the second, three seconds later
      expect(arrivals[1].at - arrivals[0].at, JSON.stringify(arrivals)).toBeGreaterThan(2000);
    });

    it("a user without RBAC never reaches the backend; with a Role, the backend is told who it is", async () => {
      const denied = await k(["get", "flunders", "-n", ns, "--as=alice"]);
      expect(denied.code).not.toBe(0);
      expect(denied.stderr).toContain(
        `flunders.${GROUP} is forbidden: User "alice" cannot list resource "flunders" in API group "${GROUP}" in the namespace "${ns}"`,
      );
      const role = await k([
        "create",
        "role",
        "flunder-reader",
        "-n",
        ns,
        "--verb=list,get",
        `--resource=flunders.${GROUP}`,
      ]);
      expect(role.code, role.stderr).toBe(0);
      const rb = await k([
        "create",
        "rolebinding",
        "alice-reads",
        "-n",
        ns,
        "--role=flunder-reader",
        "--user=alice",
      ]);
      expect(rb.code, rb.stderr).toBe(0);
      const allowed = await waitFor(
        "alice may list flunders",
        async () => {
          const r = await k(["get", "flunders", "-n", ns, "--as=alice", "-o", "json"]);
          return r.code === 0 ? r : undefined;
        },
        20_000,
        300,
      );
      const item = JSON.parse(allowed.stdout).items[0];
      expect(item.metadata.annotations["seen-user"]).toBe("alice");
    });

    it("the Service gone: Available=False ServiceNotFound, and requests are 503 service unavailable", async () => {
      const del = await k(["delete", "service", "wardle", "-n", ns]);
      expect(del.code, del.stderr).toBe(0);
      const c = await waitCondition("False", "ServiceNotFound");
      expect(c.message).toBe(`service/wardle in "${ns}" is not present`);
      const r = await api(suite.server, "GET", `/apis/${GROUP}/${VERSION}/namespaces/${ns}/flunders`);
      expect(r.status).toBe(503);
      expect(r.json).toMatchObject({
        kind: "Status",
        code: 503,
        reason: "ServiceUnavailable",
        message: "service unavailable",
      });
      const raw = await k(["get", "--raw", `/apis/${GROUP}/${VERSION}/namespaces/${ns}/flunders`]);
      expect(raw.code).not.toBe(0);
      expect(raw.stderr).toContain("service unavailable");
      // and the group leaves discovery
      const res = await k(["api-resources", `--api-group=${GROUP}`, "--no-headers"]);
      expect(res.stdout.trim()).toBe("");
    }, 120_000);
  },
);
