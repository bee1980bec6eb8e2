// edgelet started in-process on the shared control plane: the lookup the
// streaming tunnel will use (container id and log path by namespace, pod and
// container name), and the recorded pod start.
import { readFileSync, rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CriClient } from "../../../agent/cri/client";
import { parseConfig } from "../../../agent/edgelet/config";
import { type Edgelet, startEdgelet } from "../../../agent/edgelet/edgelet";
import { api, freshNamespace, shared } from "../../helpers/cluster";
import {
  available,
  BUSYBOX,
  createPod,
  deletePod,
  removeNodeSandboxes,
  SHARED_CONTAINERD_FLAGS,
  SOCKET,
  tempRoot,
  waitFor,
  waitPod,
} from "./harness";

const NODE = `edgelet-inproc-${Math.random().toString(36).slice(2, 7)}`;

describe.skipIf(!available)("edgelet in-process", () => {
  const t = shared();
  const root = tempRoot();
  const logs: string[] = [];
  let e: Edgelet;
  let ns: string;

  beforeAll(async () => {
    ns = await freshNamespace(t, "edgelet-ip");
    e = await startEdgelet(
      parseConfig([
        "--server",
        t.url,
        "--token",
        t.token,
        "--name",
        NODE,
        "--root",
        root,
        ...SHARED_CONTAINERD_FLAGS,
      ]),
      (m) => logs.push(m),
    );
  }, 90_000);

  afterAll(async () => {
    await e?.stop();
    const cri = new CriClient({ endpoint: `unix://${SOCKET}` });
    await removeNodeSandboxes(cri, NODE);
    cri.close();
    await api(t, "DELETE", `/api/v1/nodes/${NODE}`);
    await api(t, "DELETE", `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${NODE}`);
    await api(t, "DELETE", `/api/v1/namespaces/${ns}`);
    rmSync(root, { recursive: true, force: true });
  }, 60_000);

  it("locates a container's CRI id and log file by (namespace, pod, container), current and previous", {
    timeout: 120_000,
  }, async () => {
    await createPod(t, ns, {
      metadata: { name: "talker" },
      spec: {
        nodeName: NODE,
        terminationGracePeriodSeconds: 0,
        containers: [
          {
            name: "main",
            image: BUSYBOX,
            command: [
              "sh",
              "-c",
              "echo line-$(cat /proc/sys/kernel/random/uuid | cut -c1-4); sleep 1; exit 1",
            ],
          },
        ],
      },
    });
    // the first restart has no backoff; under the full suite's load the sandbox alone took 8 s
    // to start once, so the wait is generous and a failure shows what the node saw
    await waitPod(
      t,
      ns,
      "talker",
      "restarted once",
      (p) => (p.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1,
      60_000,
    ).catch((err) => {
      const rt = e.cache.byName(ns, "talker");
      const seen = rt?.containers.map((c) => `${c.name}#${c.attempt} ${c.state} exit=${c.exitCode}`);
      throw new Error(
        `${err.message}\nruntime: ${JSON.stringify(seen)}\nedgelet log:\n${logs.slice(-40).join("\n")}`,
      );
    });
    const cur = await waitFor("current container located", async () => e.locate(ns, "talker", "main"));
    const prev = e.locate(ns, "talker", "main", true);
    expect(cur.containerId).toMatch(/^[0-9a-f]{64}$/);
    expect(prev?.containerId).toBeDefined();
    expect(prev?.containerId).not.toBe(cur.containerId);
    expect(prev?.logPath).toMatch(new RegExp(`/logs/${ns}_talker_[0-9a-f-]+/main/0\\.log$`));
    // CRI log format: <time> <stream> <tag> <line>
    expect(readFileSync(prev?.logPath ?? "", "utf8")).toMatch(/^\S+ stdout F line-/m);
    expect(e.locateSandbox(ns, "talker")?.podIP).toMatch(/^10\.88\./);
    expect(e.locate(ns, "talker", "nope")).toBeUndefined();
    expect(e.workers.starts.some((s) => s.name === `${ns}/talker`)).toBe(true);
    const uid = cur.podUid;
    await deletePod(t, ns, "talker");
    await waitFor(
      "runtime pod gone",
      async () => e.cache.get(uid).sandboxes.length === 0 && e.workers.phaseOf(uid) === undefined,
      // a crash-looping container may be mid-restart when the pod goes; under the full suite's
      // load containerd's stop and removal of that sandbox took over 15 s once, and over 30 s
      // once when a neighbouring suite's server was still starting (its start took 40 s)
      60_000,
    ).catch((err) => {
      const left = e.cache.get(uid);
      throw new Error(
        `${err.message}\nsandboxes: ${JSON.stringify(left.sandboxes.map((x) => x.state))}, worker: ${e.workers.phaseOf(uid)}` +
          `\nedgelet log:\n${logs.slice(-40).join("\n")}`,
      );
    });
  });
});
