// A real `edgelet join` with a bootstrap token against a control plane whose node credentials
// last 8 s: the agent renews its credential over its own connection, so its node stays Ready
// and its pod keeps running (logs still reach it through the tunnel) across several lifetimes;
// a restarted agent carries on with its kept credential; a second join for the live node is
// refused; deleting the Node revokes the agent's credential (issue 33 finding 6).
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CriClient } from "../../../agent/cri/client";
import { CREDENTIAL_FILE } from "../../../agent/edgelet/credentials";
import { bootstrapTokenSecret, randomBootstrapToken } from "../../../api/bootstrap-token";
import { api, freshNamespace, type Target } from "../../helpers/cluster";
import { type OwnServer, removeStateDir, startOwnServer } from "../../helpers/own-server";
import {
  available,
  BUSYBOX,
  createPod,
  EdgeletProcess,
  removeNodeSandboxes,
  SOCKET,
  sleep,
  tempRoot,
  waitFor,
  waitPod,
} from "./harness";

const LIFETIME = 8;

describe.skipIf(!available)("edgelet node credentials (short-lived, renewed, revocable)", () => {
  const name = `creds-${Math.random().toString(36).slice(2, 7)}`;
  const root = tempRoot();
  const cri = new CriClient({ endpoint: `unix://${SOCKET}` });
  let server: OwnServer;
  let edgelet: EdgeletProcess;
  let ns: string;
  let bootstrap: string;

  async function bootstrapToken(): Promise<string> {
    const { id, secret, token } = randomBootstrapToken();
    const r = await api(
      server,
      "POST",
      "/api/v1/namespaces/kube-system/secrets",
      bootstrapTokenSecret(id, secret),
    );
    expect(r.status, r.text).toBe(201);
    return token;
  }

  const kept = () => JSON.parse(readFileSync(join(root, CREDENTIAL_FILE), "utf8")).token as string;

  async function nodeReady(): Promise<boolean> {
    const r = await api(server, "GET", `/api/v1/nodes/${name}`);
    return (
      r.status === 200 &&
      r.json.status?.conditions?.some((c: any) => c.type === "Ready" && c.status === "True")
    );
  }

  /** Ready as the admin sees it (the harness's waitReady asks with the edgelet's own token, here a bootstrap token). */
  const waitReady = () =>
    waitFor("node Ready", nodeReady, 60_000, 200).catch((e) => {
      throw new Error(`${e.message}\nedgelet output:\n${edgelet.output}`);
    });

  beforeAll(async () => {
    server = await startOwnServer({
      vars: { EDGEPLANE_NODE_CREDENTIAL_SECONDS: String(LIFETIME), EDGEPLANE_TOKEN_CACHE_TTL_SECONDS: "1" },
    });
    ns = await freshNamespace(server, "creds");
    bootstrap = await bootstrapToken();
    edgelet = new EdgeletProcess({ ...server, token: bootstrap } as Target, name, root);
    edgelet.start();
    await waitReady();
  }, 120_000);

  afterAll(async () => {
    await edgelet?.stop();
    await removeNodeSandboxes(cri, name);
    cri.close();
    if (server) {
      await server.stop();
      removeStateDir(server.stateDir);
    }
    rmSync(root, { recursive: true, force: true });
  }, 120_000);

  it("stays Ready with its pod running across several credential lifetimes, renewing its own credential", async () => {
    expect(edgelet.output).toContain("credentials from bootstrap-exchange");
    const first = kept();
    await createPod(server, ns, {
      metadata: { name: "steady" },
      spec: {
        nodeName: name,
        terminationGracePeriodSeconds: 1,
        containers: [{ name: "main", image: BUSYBOX, command: ["sh", "-c", "echo hello; sleep 3600"] }],
      },
    });
    await waitPod(server, ns, "steady", "Running", (p) => p.status?.phase === "Running", 60_000);
    // three lifetimes and a half: Ready at every look, and the Lease keeps being renewed
    const tokens = new Set<string>([first]);
    const until = Date.now() + LIFETIME * 3500;
    while (Date.now() < until) {
      expect(await nodeReady(), edgelet.output).toBe(true);
      tokens.add(kept());
      await sleep(1000);
    }
    const lease = await api(
      server,
      "GET",
      `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${name}`,
    );
    expect(Date.now() - Date.parse(lease.json.spec.renewTime)).toBeLessThan(15_000);
    expect(tokens.size, edgelet.output).toBeGreaterThanOrEqual(4);
    expect(edgelet.output).not.toContain("renewing the node credential failed");
    // the first credential is long expired
    expect((await api({ ...server, token: first }, "GET", `/api/v1/nodes/${name}`)).status).toBe(401);
    // the pod ran on undisturbed, and the tunnel (opened with the first credential) still serves its logs
    const pod = (await api(server, "GET", `/api/v1/namespaces/${ns}/pods/steady`)).json;
    expect(pod.status.phase).toBe("Running");
    expect(pod.status.containerStatuses[0].restartCount).toBe(0);
    const logs = await api(server, "GET", `/api/v1/namespaces/${ns}/pods/steady/log`);
    expect(logs.status, logs.text).toBe(200);
    expect(logs.text).toContain("hello");
  }, 120_000);

  it("refuses a second join for the live node (409); an agent restarted after a crash carries on with its kept credential", async () => {
    const second = await api(
      { ...server, token: await bootstrapToken() },
      "POST",
      "/edgeplane/node-credentials",
      {
        nodeName: name,
      },
    );
    expect(second.status, second.text).toBe(409);
    expect(second.json).toMatchObject({ kind: "Status", reason: "Conflict" });
    // killed right after a renewal (a crash; its kept credential has most of its 8 s left)
    const current = kept();
    await waitFor("a renewal", async () => kept() !== current, LIFETIME * 1000, 50);
    await edgelet.stop("SIGKILL");
    edgelet.output = "";
    edgelet.start();
    await waitFor(
      "the restarted agent registered",
      async () => edgelet.output.includes("registered ("),
      60_000,
    );
    expect(edgelet.output).toContain("credentials from stored-credential");
    expect(edgelet.output).not.toContain("refused for now");
    await waitReady();
  }, 90_000);

  it("deleting the Node revokes the agent's credential; the name can then be joined again", async () => {
    const token = kept();
    expect((await api(server, "DELETE", `/api/v1/nodes/${name}`)).status).toBe(200);
    await waitFor(
      "the agent told its credential was revoked",
      async () => edgelet.output.includes("node credential REVOKED"),
      LIFETIME * 1000 + 5_000,
    );
    expect((await api({ ...server, token }, "GET", `/api/v1/nodes/${name}`)).status).toBe(401);
    // the revoked agent cannot bring its Node back
    await sleep(2000);
    expect((await api(server, "GET", `/api/v1/nodes/${name}`)).status).toBe(404);
    const again = await api({ ...server, token: bootstrap }, "POST", "/edgeplane/node-credentials", {
      nodeName: name,
    });
    expect(again.status, again.text).toBe(201);
    expect(existsSync(join(root, CREDENTIAL_FILE))).toBe(true);
  }, 60_000);
});
