// `edgelet join --runtime simulated` with a bootstrap token, against a control plane whose node
// credentials last 6 s: the simulated node gets its own credential, renews it, and after
// several lifetimes is still Ready and still runs the pods bound to it (every request of the
// simulated nodes' client carries the renewed token). Needs no containerd.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CREDENTIAL_FILE } from "../../agent/edgelet/credentials";
import { bootstrapTokenSecret, randomBootstrapToken } from "../../api/bootstrap-token";
import { api, freshNamespace, until } from "../helpers/cluster";
import { type OwnServer, removeStateDir, startOwnServer } from "../helpers/own-server";

const LIFETIME = 6;

describe("edgelet join --runtime simulated with a bootstrap token", () => {
  const name = `simjoin-${Math.random().toString(36).slice(2, 7)}`;
  const node = `${name}-0`;
  const root = mkdtempSync(join(tmpdir(), "simjoin-"));
  let server: OwnServer;
  let child: ChildProcess | undefined;
  let out = "";

  beforeAll(async () => {
    server = await startOwnServer({
      vars: { EDGEPLANE_NODE_CREDENTIAL_SECONDS: String(LIFETIME), EDGEPLANE_TOKEN_CACHE_TTL_SECONDS: "1" },
    });
  }, 120_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child?.once("exit", r));
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (child.exitCode === null) child.kill("SIGKILL");
    }
    if (server) {
      await server.stop();
      removeStateDir(server.stateDir);
    }
    rmSync(root, { recursive: true, force: true });
  }, 60_000);

  const kept = () => JSON.parse(readFileSync(join(root, CREDENTIAL_FILE), "utf8")).token as string;

  async function ready(): Promise<boolean> {
    const r = await api(server, "GET", `/api/v1/nodes/${node}`);
    return (
      r.status === 200 &&
      r.json.status?.conditions?.some((c: any) => c.type === "Ready" && c.status === "True")
    );
  }

  it("joins as its own node and stays Ready, running pods, across several credential lifetimes", async () => {
    const { id, secret, token } = randomBootstrapToken();
    const made = await api(
      server,
      "POST",
      "/api/v1/namespaces/kube-system/secrets",
      bootstrapTokenSecret(id, secret),
    );
    expect(made.status, made.text).toBe(201);
    const bin = new URL("../../agent/bin/edgelet.mjs", import.meta.url).pathname;
    child = spawn(
      process.execPath,
      [
        bin,
        "join",
        "--server",
        server.url,
        "--token",
        token,
        "--name",
        name,
        "--runtime",
        "simulated",
        "--root",
        root,
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    child.stdout?.on("data", (d) => (out += d));
    child.stderr?.on("data", (d) => (out += d));
    await until("the simulated node Ready", async () => (await ready()) || undefined, 30_000, 200).catch(
      (e) => {
        throw new Error(`${e.message}\n${out}`);
      },
    );
    await until(
      "the agent's start logged",
      async () => out.includes("RUNTIME: simulated") || undefined,
      10_000,
    );
    expect(out).toContain("credentials from bootstrap-exchange");
    const first = kept();
    const tokens = new Set([first]);
    const ends = Date.now() + LIFETIME * 3500;
    while (Date.now() < ends) {
      expect(await ready(), out).toBe(true);
      tokens.add(kept());
      await new Promise((r) => setTimeout(r, 1000));
    }
    expect(tokens.size, out).toBeGreaterThanOrEqual(4);
    expect(out).not.toContain("renewing the node credential failed");
    expect((await api({ ...server, token: first }, "GET", `/api/v1/nodes/${node}`)).status).toBe(401);
    // a pod bound to it now is run, reported through requests carrying the renewed credential
    const ns = await freshNamespace(server, "simjoin");
    const pod = await api(server, "POST", `/api/v1/namespaces/${ns}/pods`, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p" },
      spec: { nodeName: node, containers: [{ name: "c", image: "busybox" }] },
    });
    expect(pod.status, pod.text).toBe(201);
    await until(
      "the pod Running",
      async () =>
        (await api(server, "GET", `/api/v1/namespaces/${ns}/pods/p`)).json.status?.phase === "Running",
      15_000,
      200,
    ).catch((e) => {
      throw new Error(`${e.message}\n${out}`);
    });
  }, 90_000);
});
