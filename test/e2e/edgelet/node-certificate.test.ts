// TLS bootstrap of a real node: `edgelet join --token <bootstrap token> --client-certificate`
// over HTTPS makes a key, submits a CSR for system:node:<name> (signer
// kubernetes.io/kube-apiserver-client-kubelet), which csrapproving approves at once for a
// bootstrap token and the signer issues; the node then works with the certificate alone: it
// becomes Ready, runs a pod, and `kubectl logs` reaches it through its tunnel. It renews the
// certificate over its own connection (EDGELET_CERT_ROTATE_SECONDS brings the renewal to
// seconds after the join): a CSR of system:node:<name> approved as a node renewing its own,
// and the node keeps its pod and its heartbeats.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CriClient } from "../../../agent/cri/client";
import { bootstrapTokenSecret } from "../../../api/bootstrap-token";
import { api, freshNamespace, hasKubectl, kubectl } from "../../helpers/cluster";
import { type OwnServer, removeStateDir, startOwnServer } from "../../helpers/own-server";
import {
  available,
  BUSYBOX,
  createPod,
  EdgeletProcess,
  removeNodeSandboxes,
  SOCKET,
  tempRoot,
  waitFor,
  waitPod,
} from "./harness";

const NODE = `cert-node-${Math.random().toString(36).slice(2, 7)}`;
const CSR = "/apis/certificates.k8s.io/v1/certificatesigningrequests";

describe.skipIf(!available || !hasKubectl)("edgelet TLS bootstrap with a client certificate", () => {
  let server: OwnServer;
  let edgelet: EdgeletProcess;
  let ns: string;
  const root = tempRoot();
  const dir = mkdtempSync(join(tmpdir(), "edgelet-cert-"));
  const cri = new CriClient({ endpoint: `unix://${SOCKET}` });
  const id = Math.random().toString(36).slice(2, 8).padEnd(6, "0");

  beforeAll(async () => {
    server = await startOwnServer();
    ns = await freshNamespace(server, "certnode");
    const secret = await api(
      server,
      "POST",
      "/api/v1/namespaces/kube-system/secrets",
      bootstrapTokenSecret(id, "0123456789abcdef"),
    );
    expect(secret.status, secret.text).toBe(201);
    const caFile = join(dir, "ca.crt");
    writeFileSync(caFile, server.caCert);
    edgelet = new EdgeletProcess(
      { ...server, url: server.httpsUrl, token: `${id}.0123456789abcdef` },
      NODE,
      root,
      ["--ca", caFile, "--client-certificate"],
    );
    process.env.EDGELET_CERT_ROTATE_SECONDS = "10"; // (the child's environment)
    edgelet.start();
    delete process.env.EDGELET_CERT_ROTATE_SECONDS;
  }, 120_000);

  afterAll(async () => {
    await edgelet?.stop();
    await removeNodeSandboxes(cri, NODE);
    cri.close();
    await server?.stop();
    removeStateDir(server?.stateDir);
    rmSync(root, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  });

  it("joins with a certificate from an auto-approved CSR, runs a pod, and serves its logs", async () => {
    await waitFor(
      "node Ready",
      async () => {
        if (edgelet.child?.exitCode != null) throw new Error(`edgelet exited: ${edgelet.output}`);
        const r = await api(server, "GET", `/api/v1/nodes/${NODE}`);
        return r.json?.status?.conditions?.some((c: any) => c.type === "Ready" && c.status === "True");
      },
      90_000,
      250,
    ).catch((e) => {
      throw new Error(`${e.message}\nedgelet output:\n${edgelet.output}`);
    });
    const csrs = (await api(server, "GET", CSR)).json.items;
    const mine = csrs.find((c: any) => c.spec.username === `system:bootstrap:${id}`);
    expect(mine.spec.signerName).toBe("kubernetes.io/kube-apiserver-client-kubelet");
    expect(mine.status.conditions[0]).toMatchObject({ type: "Approved", reason: "AutoApproved" });
    expect(mine.status.certificate).toBeTruthy();
    // the node renews its own Lease (with its certificate: it has no other credential)
    const leasePath = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${NODE}`;
    await waitFor("the node's lease", async () => (await api(server, "GET", leasePath)).status === 200);

    await createPod(server, ns, {
      metadata: { name: "hello" },
      spec: {
        nodeName: NODE,
        restartPolicy: "Never",
        containers: [
          { name: "main", image: BUSYBOX, command: ["sh", "-c", "echo hello-from-cert-node; sleep 3600"] },
        ],
      },
    });
    await waitPod(server, ns, "hello", "Running", (p) => p.status?.phase === "Running", 90_000);
    const logs = await kubectl(server, ["logs", "-n", ns, "hello"]);
    expect(logs.stdout, logs.stderr).toContain("hello-from-cert-node");
    expect(edgelet.output).toContain("credentials from certificate-signing-request");

    // the renewal: a CSR of the node itself, approved as selfnodeclient, used from then on
    await waitFor(
      "a rotation",
      async () => edgelet.output.includes("rotated the node's client certificate"),
      60_000,
    );
    const renewed = (await api(server, "GET", CSR)).json.items.find(
      (c: any) => c.spec.username === `system:node:${NODE}`,
    );
    expect(renewed.status.conditions[0]).toMatchObject({ type: "Approved", reason: "AutoApproved" });
    expect(renewed.status.certificate).toBeTruthy();
    const rotatedAt = Date.now();
    // heartbeats go on with the new certificate, and the pod stays as it was
    await waitFor(
      "a heartbeat after the rotation",
      async () => {
        const l = await api(
          server,
          "GET",
          `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${NODE}`,
        );
        return Date.parse(l.json.spec.renewTime) > rotatedAt;
      },
      30_000,
      250,
    );
    const pod = await waitPod(server, ns, "hello", "still Running", (p) => p.status?.phase === "Running");
    expect(pod.status.containerStatuses[0].restartCount).toBe(0);
    const again = await kubectl(server, ["logs", "-n", ns, "hello"]);
    expect(again.stdout, again.stderr).toContain("hello-from-cert-node");
  }, 240_000);
});
