// Shared pieces of the edgelet end-to-end tests: a private control plane, an
// `edgelet join` child process, pod helpers and CRI clean-up by node label.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll } from "vitest";
import { CriClient } from "../../../agent/cri/client";
import { api, freshNamespace, type Target, until } from "../../helpers/cluster";
import { type OwnServer, removeStateDir, startOwnServer } from "../../helpers/own-server";

export const SOCKET = "/run/edgeplane/containerd.sock";
export const REPO = fileURLToPath(new URL("../../../", import.meta.url));
export const BUSYBOX = "127.0.0.1:5000/edgeplane/busybox:1";
export const PRIVATE = "127.0.0.1:5001/private/busybox:1";
export const available = existsSync(SOCKET);
export const NODE_LABEL = "edgeplane.io/node";
/**
 * Flags of the edgelets these suites start beside each other on the machine's one containerd
 * (and its one CNI conf dir): they all write the same conflist (the one setup:containerd
 * writes), share its IPAM state so no two pods get one address, and program no pod network of
 * their own (several nodes in one network namespace). Real hosts: local-engine/hosts.
 */
export const SHARED_CONTAINERD_FLAGS = [
  "--pod-cidr",
  "10.88.0.0/16",
  "--cni-ipam-dir",
  "/var/lib/edgeplane/cni/networks",
  "--pod-network",
  "none",
];

if (!available) console.warn("\n*** SKIPPED: containerd not running (run npm run setup:containerd) ***\n");

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls until fn gives a value (the shared helper, with this harness's longer default). */
export const waitFor = <T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  ms = 30_000,
  every = 100,
) => until(what, fn, ms, every);

let tables = 0;

export class EdgeletProcess {
  child?: ChildProcess;
  output = "";
  /** the node's nftables table: one of its own per process, so that runs never share one */
  readonly nftTable: string;
  constructor(
    readonly t: Target,
    readonly nodeName: string,
    readonly root: string,
    readonly extraArgs: string[] = [],
  ) {
    this.nftTable = `e2e${process.pid}x${++tables}`;
  }

  start(): void {
    const bin = join(REPO, "agent/bin/edgelet.mjs");
    this.child = spawn(
      process.execPath,
      [
        bin,
        "join",
        "--server",
        this.t.url,
        "--token",
        this.t.token,
        "--name",
        this.nodeName,
        "--root",
        this.root,
        "--nft-table",
        this.nftTable,
        ...this.extraArgs,
        ...SHARED_CONTAINERD_FLAGS,
      ],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    this.child.stdout?.on("data", (d) => (this.output += d));
    this.child.stderr?.on("data", (d) => (this.output += d));
  }

  /** Waits for its Node to be Ready (the edgelet's output in the error when it is not). */
  async waitReady(ms = 60_000): Promise<void> {
    await waitFor(
      "node Ready",
      async () => {
        const r = await api(this.t, "GET", `/api/v1/nodes/${this.nodeName}`);
        return (
          r.status === 200 &&
          r.json.status?.conditions?.some((c: any) => c.type === "Ready" && c.status === "True")
        );
      },
      ms,
      200,
    ).catch((e) => {
      throw new Error(`${e.message}\nedgelet output:\n${this.output}`);
    });
  }

  async stop(signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null) return;
    const done = new Promise((r) => c.once("exit", r));
    c.kill(signal);
    await Promise.race([done, sleep(10_000).then(() => c.kill("SIGKILL"))]);
    this.child = undefined;
  }
}

export function tempRoot(): string {
  return mkdtempSync(join(tmpdir(), "edgelet-e2e-"));
}

export function registryCreds(): { username: string; password: string } {
  const [username = "", password = ""] = readFileSync(join(REPO, ".edgeplane/registry-credentials"), "utf8")
    .trim()
    .split(/:(.*)/s);
  return { username, password };
}

export async function createPod(t: Target, ns: string, pod: any): Promise<any> {
  const r = await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, { apiVersion: "v1", kind: "Pod", ...pod });
  if (r.status !== 201) throw new Error(`create pod: ${r.status} ${r.text}`);
  return r.json;
}

export async function getPod(t: Target, ns: string, name: string): Promise<any | undefined> {
  const r = await api(t, "GET", `/api/v1/namespaces/${ns}/pods/${name}`);
  return r.status === 200 ? r.json : undefined;
}

export async function waitPod(
  t: Target,
  ns: string,
  name: string,
  what: string,
  pred: (p: any) => boolean,
  ms = 30_000,
): Promise<any> {
  let last: any;
  try {
    return await waitFor(
      what,
      async () => {
        last = await getPod(t, ns, name);
        return last && pred(last) ? last : undefined;
      },
      ms,
      150,
    );
  } catch (e) {
    throw new Error(`${(e as Error).message}; last status: ${JSON.stringify(last?.status)}`);
  }
}

/** Deletes a pod and waits until the API object is gone. */
export async function deletePod(t: Target, ns: string, name: string, ms = 30_000): Promise<void> {
  await api(t, "DELETE", `/api/v1/namespaces/${ns}/pods/${name}`);
  await waitFor(`pod ${name} gone`, async () => (await getPod(t, ns, name)) === undefined, ms, 150);
}

/** Removes every sandbox edgelet made for a node (test clean-up). */
export async function removeNodeSandboxes(cri: CriClient, nodeName: string): Promise<void> {
  const selector = { [NODE_LABEL]: nodeName };
  for (const c of await cri.listContainers({ label_selector: selector }).catch(() => [])) {
    await cri.stopContainer(c.id, 0).catch(() => {});
    await cri.removeContainer(c.id).catch(() => {});
  }
  for (const s of await cri.listPodSandbox({ label_selector: selector }).catch(() => [])) {
    await cri.stopPodSandbox(s.id).catch(() => {});
    await cri.removePodSandbox(s.id).catch(() => {});
  }
}

export function containerStatus(pod: any, name: string): any {
  return [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].find(
    (c: any) => c.name === name,
  );
}

/** What a suite with one joined edgelet node has; filled in by its beforeAll. */
export interface NodeSuite {
  server: OwnServer;
  edgelet: EdgeletProcess;
  /** a namespace of the suite's own */
  ns: string;
  cri: CriClient;
  root: string;
}

/**
 * Registers, in the calling describe block, the start of a private control plane with the
 * node `nodeName` joined by `edgelet join` (Ready before the tests run), and their clean-up.
 */
export function withEdgeletNode(nodeName: string, nsPrefix: string): NodeSuite {
  const suite = {
    root: tempRoot(),
    cri: new CriClient({ endpoint: `unix://${SOCKET}` }),
  } as NodeSuite;
  beforeAll(async () => {
    suite.server = await startOwnServer();
    suite.ns = await freshNamespace(suite.server, nsPrefix);
    suite.edgelet = new EdgeletProcess(suite.server, nodeName, suite.root);
    suite.edgelet.start();
    await suite.edgelet.waitReady();
  }, 120_000);
  afterAll(async () => {
    await suite.edgelet?.stop();
    await removeNodeSandboxes(suite.cri, nodeName);
    suite.cri.close();
    if (suite.server) {
      await suite.server.stop();
      removeStateDir(suite.server.stateDir);
    }
    rmSync(suite.root, { recursive: true, force: true });
  }, 60_000);
  return suite;
}
