// A private image cached on a node is not a free pass: a pod may run it from the cache only with
// credentials that could pull it (upstream's imagePullCredentialsVerificationPolicy
// NeverVerifyPreloadedImages, KEP-2535); otherwise the agent pulls again with the pod's own
// secrets and the registry decides. Real containerd, the private registry at 127.0.0.1:5001,
// a control plane of its own and an edgelet with its own root and cgroup root.
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CriClient } from "../../../agent/cri/client";
import { hierarchies } from "../../../agent/edgelet/cgroups";
import { api, freshNamespace } from "../../helpers/cluster";
import { type OwnServer, removeStateDir, startOwnServer } from "../../helpers/own-server";
import {
  available,
  BUSYBOX,
  containerStatus,
  createPod,
  deletePod,
  EdgeletProcess,
  getPod,
  PRIVATE,
  REPO,
  registryCreds,
  removeNodeSandboxes,
  SHARED_CONTAINERD_FLAGS,
  SOCKET,
  tempRoot,
  waitFor,
  waitPod,
} from "./harness";

const NODE = `imgcache-${process.pid}-${Math.random().toString(36).slice(2, 6)}`;
const CGROUP_ROOT = `/edgeplane-imgcache-${process.pid}`;

/** An edgelet with a cgroup root of its own (the harness's shares the default one). */
class OwnCgroupEdgelet extends EdgeletProcess {
  override start(): void {
    this.child = spawn(
      process.execPath,
      [
        join(REPO, "agent/bin/edgelet.mjs"),
        "join",
        "--server",
        this.t.url,
        "--token",
        this.t.token,
        "--name",
        this.nodeName,
        "--root",
        this.root,
        "--cgroup-root",
        CGROUP_ROOT,
        "--nft-table",
        this.nftTable,
        ...SHARED_CONTAINERD_FLAGS,
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    this.child.stdout?.on("data", (d) => (this.output += d));
    this.child.stderr?.on("data", (d) => (this.output += d));
  }
}

/** Removes a directory tree of empty directories (a cgroup tree once its tasks are gone). */
function rmdirTree(dir: string): void {
  if (!existsSync(dir)) return;
  for (const e of readdirSync(dir, { withFileTypes: true }))
    if (e.isDirectory()) rmdirTree(join(dir, e.name));
  try {
    rmdirSync(dir);
  } catch {}
}

function dockerConfigSecret(name: string, password: string) {
  const { username } = registryCreds();
  const auth = Buffer.from(`${username}:${password}`).toString("base64");
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name },
    type: "kubernetes.io/dockerconfigjson",
    data: {
      ".dockerconfigjson": Buffer.from(
        JSON.stringify({ auths: { "127.0.0.1:5001": { username, password, auth } } }),
      ).toString("base64"),
    },
  };
}

const podOf = (image: string, policy: string, secret?: string) => ({
  nodeName: NODE,
  terminationGracePeriodSeconds: 0,
  ...(secret ? { imagePullSecrets: [{ name: secret }] } : {}),
  containers: [{ name: "main", image, imagePullPolicy: policy, command: ["sleep", "3600"] }],
});

const waiting = (p: any) => containerStatus(p, "main")?.state?.waiting;

describe.skipIf(!available)("a cached private image and the pods that may use it", () => {
  let server: OwnServer;
  let edgelet: OwnCgroupEdgelet;
  let ns: string;
  let other: string;
  const root = tempRoot();
  const cri = new CriClient({ endpoint: `unix://${SOCKET}` });

  beforeAll(async () => {
    server = await startOwnServer();
    ns = await freshNamespace(server, "imgcache");
    other = await freshNamespace(server, "imgcache-b");
    const { password } = registryCreds();
    for (const [n, s] of [
      [ns, dockerConfigSecret("regcred", password)],
      [other, dockerConfigSecret("copy", password)],
      [ns, dockerConfigSecret("wrongcred", `${password}-not`)],
    ] as const) {
      const r = await api(server, "POST", `/api/v1/namespaces/${n}/secrets`, s);
      expect(r.status, r.text).toBe(201);
    }
    edgelet = new OwnCgroupEdgelet(server, NODE, root);
    edgelet.start();
    await edgelet.waitReady();
  }, 180_000);

  afterAll(async () => {
    await edgelet?.stop();
    await removeNodeSandboxes(cri, NODE);
    cri.close();
    if (server) {
      await server.stop();
      removeStateDir(server.stateDir);
    }
    for (const h of hierarchies()) rmdirTree(join(h, CGROUP_ROOT));
    rmSync(root, { recursive: true, force: true });
  }, 60_000);

  it("a pod with the pull secret pulls it; a pod without one gets the registry's refusal, not the cache", async () => {
    // pulled by this node with the secret (Always: whatever the cache held before)
    await createPod(server, ns, {
      metadata: { name: "with-secret" },
      spec: podOf(PRIVATE, "Always", "regcred"),
    });
    const ok = await waitPod(
      server,
      ns,
      "with-secret",
      "Running",
      (p) => p.status?.phase === "Running",
      90_000,
    );
    expect(containerStatus(ok, "main").state.running).toBeTruthy();

    // the image is now on the node: a pod without the secret must not run it from there
    await createPod(server, ns, { metadata: { name: "no-secret" }, spec: podOf(PRIVATE, "IfNotPresent") });
    const reasons = new Set<string>();
    const denied = await waitPod(
      server,
      ns,
      "no-secret",
      "ImagePullBackOff",
      (p) => {
        const r = waiting(p)?.reason;
        if (r) reasons.add(r);
        return r === "ImagePullBackOff";
      },
      90_000,
    );
    expect(reasons.has("ImagePullBackOff")).toBe(true);
    expect(denied.status.phase).toBe("Pending");
    expect(containerStatus(denied, "main").state.running).toBeUndefined();
    expect(waiting(denied).message).toContain(PRIVATE);

    // nor may a pod whose secret holds other (wrong) credentials
    await createPod(server, ns, {
      metadata: { name: "wrong-secret" },
      spec: podOf(PRIVATE, "IfNotPresent", "wrongcred"),
    });
    await waitPod(server, ns, "wrong-secret", "ErrImagePull or ImagePullBackOff", (p) =>
      ["ErrImagePull", "ImagePullBackOff"].includes(waiting(p)?.reason),
    );

    // with pull policy Never, the refusal is upstream's ErrImageNeverPull
    await createPod(server, ns, { metadata: { name: "never" }, spec: podOf(PRIVATE, "Never") });
    const never = await waitPod(
      server,
      ns,
      "never",
      "ErrImageNeverPull",
      (p) => waiting(p)?.reason === "ErrImageNeverPull",
    );
    expect(waiting(never).message).toBe(
      `Container image "${PRIVATE}" is present with pull policy of Never but does not have the proper auth (image secret) that was used to pull the image`,
    );
    await Promise.all(["no-secret", "wrong-secret", "never"].map((n) => deletePod(server, ns, n)));
  }, 240_000);

  it("a pod whose secret holds the same credentials uses the cache without pulling", async () => {
    await createPod(server, other, {
      metadata: { name: "same-creds" },
      spec: podOf(PRIVATE, "IfNotPresent", "copy"),
    });
    const p = await waitPod(
      server,
      other,
      "same-creds",
      "Running",
      (x) => x.status?.phase === "Running",
      90_000,
    );
    expect(containerStatus(p, "main").state.running).toBeTruthy();
    const present = `Pulled: Container image "${PRIVATE}" already present on machine`;
    const messages = await waitFor("the pod's Pulled event", async () => {
      const events = await api(
        server,
        "GET",
        `/api/v1/namespaces/${other}/events?fieldSelector=involvedObject.name%3Dsame-creds`,
      );
      const m = ((events.json?.items ?? []) as any[]).map((e) => `${e.reason}: ${e.message}`);
      return m.includes(present) ? m : undefined;
    });
    expect(messages).toContain(present);
    expect(messages.some((m) => m.startsWith("Pulling:"))).toBe(false);
    await deletePod(server, other, "same-creds");
  }, 120_000);

  it("an image pulled without credentials stays for every pod", async () => {
    await createPod(server, ns, { metadata: { name: "open-1" }, spec: podOf(BUSYBOX, "Always") });
    await waitPod(server, ns, "open-1", "Running", (x) => x.status?.phase === "Running", 90_000);
    await createPod(server, other, { metadata: { name: "open-2" }, spec: podOf(BUSYBOX, "Never") });
    await waitPod(server, other, "open-2", "Running", (x) => x.status?.phase === "Running", 90_000);
    await Promise.all([deletePod(server, ns, "open-1"), deletePod(server, other, "open-2")]);
  }, 120_000);

  it("keeps its records under its root, with no secret in them", async () => {
    const dir = join(root, "image-pulls");
    const { password } = registryCreds();
    const all = (d: string): string[] =>
      readdirSync(d, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? all(join(d, e.name)) : [join(d, e.name)],
      );
    const written = all(dir);
    expect(written.some((f) => f.includes(`${join(dir, "pulled")}/`))).toBe(true);
    for (const f of written) expect(readFileSync(f).toString("latin1")).not.toContain(password);
    await deletePod(server, ns, "with-secret");
    expect(await getPod(server, ns, "with-secret")).toBeUndefined();
  });
});
