// The `kubernetes` Service of a cluster other than the root (docs/clusters.md): a pod on a real
// containerd node joined to cluster c reaches c's apiserver at https://kubernetes.default.svc,
// verifying TLS with its own CA, over HTTP/1.1 and HTTP/2, and reads c's objects, never the
// root's of the same name. The node's relay names its cluster before the pod's TLS session
// (api/wire/cluster-preamble.ts); the front door serves the connection under /clusters/c/.
import { execFile } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CriClient } from "../../../agent/cri/client";
import { api, hasKubectl, kubectl, type Target } from "../../helpers/cluster";
import { type OwnServer, removeStateDir, startOwnServer, tempStateDir } from "../../helpers/own-server";
import { available, EdgeletProcess, REPO, removeNodeSandboxes, SOCKET, tempRoot, waitFor } from "./harness";

const run = promisify(execFile);
const TOOLS = "127.0.0.1:5000/edgeplane/tools:1";
const hasNft = existsSync("/usr/sbin/nft") || existsSync("/usr/bin/nft");
const hasTools =
  available &&
  (await fetch("http://127.0.0.1:5000/v2/edgeplane/tools/manifests/1", {
    method: "HEAD",
    headers: { accept: "application/vnd.oci.image.manifest.v1+json" },
  })
    .then((r) => r.ok)
    .catch(() => false));
if (available && (!hasNft || !hasTools))
  console.warn(
    "\n*** SKIPPED: a cluster's kubernetes Service: needs nft and the edgeplane/tools image (npm run setup:containerd) ***\n",
  );

const CLUSTER = `inpod-${Math.random().toString(36).slice(2, 7)}`;
const NODE = `capi-${Math.random().toString(36).slice(2, 7)}`;
const NS = "relay-check";

describe.skipIf(!available || !hasNft || !hasKubectl || !hasTools)(
  "a cluster's own kubernetes Service, from a pod on a containerd node",
  () => {
    let server: OwnServer;
    let child: Target;
    let edgelet: EdgeletProcess;
    const root = tempRoot();
    const cliState = tempStateDir("edgeplane-cli-");
    const cri = new CriClient({ endpoint: `unix://${SOCKET}` });

    /** namespace NS with ConfigMap "whoami" saying `who`, readable by NS's default service account */
    const seed = async (t: Target, who: string) => {
      const yaml = `
apiVersion: v1
kind: Namespace
metadata: {name: ${NS}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: whoami, namespace: ${NS}}
data: {cluster: ${who}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: read-whoami, namespace: ${NS}}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: read-whoami, namespace: ${NS}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: read-whoami}
subjects: [{kind: ServiceAccount, name: default, namespace: ${NS}}]
`;
      const r = await kubectl(t, ["apply", "-f", "-"], { input: yaml });
      expect(r.code, r.stderr).toBe(0);
    };

    /** curl in the client pod with its service account's token and CA, then `args` */
    const curlInPod = (args: string) => {
      const sa = "/var/run/secrets/kubernetes.io/serviceaccount";
      const script = `curl -sS --cacert ${sa}/ca.crt -H "Authorization: Bearer $(cat ${sa}/token)" ${args}`;
      return kubectl(child, ["exec", "-n", NS, "client", "--", "sh", "-c", script]);
    };

    beforeAll(async () => {
      server = await startOwnServer();
      const made = await run(
        process.execPath,
        [
          join(REPO, "cli/bin/edgeplane.mjs"),
          "cluster",
          "create",
          CLUSTER,
          "--kubeconfig",
          server.kubeconfigPath,
        ],
        { env: { ...process.env, EDGEPLANE_STATE_DIR: cliState } },
      );
      const kubeconfigPath = made.stdout.trim();
      const token = /token: (\S+)/.exec(readFileSync(kubeconfigPath, "utf8"))![1]!;
      child = { url: `${server.url}/clusters/${CLUSTER}`, token, kubeconfigPath };
      await seed(server, "root");
      await seed(child, CLUSTER);
      edgelet = new EdgeletProcess(child, NODE, root);
      edgelet.start();
      await edgelet.waitReady(90_000);
      const pod = await kubectl(child, ["apply", "-f", "-"], {
        input: `
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: ${NS}}
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - {name: c, image: ${TOOLS}, command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]}
`,
      });
      expect(pod.code, pod.stderr).toBe(0);
      await waitFor(
        "client pod Ready",
        async () => {
          const p = (await api(child, "GET", `/api/v1/namespaces/${NS}/pods/client`)).json;
          return p?.status?.conditions?.some((c: any) => c.type === "Ready" && c.status === "True");
        },
        90_000,
        300,
      ).catch((e) => {
        throw new Error(`${e.message}\nedgelet:\n${edgelet.output.slice(-4000)}`);
      });
    }, 240_000);

    afterAll(async () => {
      await edgelet?.stop();
      await removeNodeSandboxes(cri, NODE);
      cri.close();
      if (server) {
        await server.stop();
        removeStateDir(server.stateDir);
      }
      rmSync(root, { recursive: true, force: true });
      rmSync(cliState, { recursive: true, force: true });
    }, 60_000);

    it("publishes the apiserver's address as the cluster's kubernetes Endpoints", async () => {
      const eps = await waitFor(
        "kubernetes Endpoints",
        async () => {
          const r = await api(child, "GET", "/api/v1/namespaces/default/endpoints/kubernetes");
          return r.status === 200 && r.json.subsets?.length ? r.json : undefined;
        },
        30_000,
        300,
      );
      expect(eps.subsets[0].addresses[0].ip).toBe("127.0.0.1");
      expect(eps.subsets[0].ports[0].port).toBe(server.port);
    });

    for (const version of ["1.1", "2"]) {
      it(`a pod reads its own cluster's objects through https://kubernetes.default.svc (HTTP/${version})`, {
        timeout: 60_000,
      }, async () => {
        const r = await curlInPod(
          `--http${version} -w '\\n%{http_version}' https://kubernetes.default.svc/api/v1/namespaces/${NS}/configmaps/whoami`,
        );
        expect(r.code, r.stderr).toBe(0);
        const lines = r.stdout.trim().split("\n");
        expect(lines.at(-1)).toBe(version === "1.1" ? "1.1" : "2");
        const cm = JSON.parse(lines.slice(0, -1).join("\n"));
        expect(cm.data).toEqual({ cluster: CLUSTER });
      });
    }

    it("the pod's service account is its cluster's: other paths of that cluster answer as RBAC says", {
      timeout: 60_000,
    }, async () => {
      const r = await curlInPod(`https://kubernetes.default.svc/api/v1/namespaces/${NS}/secrets`);
      expect(r.code, r.stderr).toBe(0);
      const status = JSON.parse(r.stdout);
      expect(status.code).toBe(403);
      expect(status.message).toContain(`system:serviceaccount:${NS}:default`);
    });
  },
);
