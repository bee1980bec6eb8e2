// The edgelet's side of the service account volume admission adds: the projected sources are
// written into the pod's volume directory, ca.crt from kube-root-ca.crt. Required (root CA
// published), a missing map fails the mount, to be retried, as the kubelet's does; optional,
// the pod starts without ca.crt.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { setupVolumes, VolumeError } from "../../../agent/edgelet/volumes";
import type { KubeObject } from "../../../api/types";
import { mutatePodForServiceAccount } from "../../../workers/admission/service-account";

const CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function podWithAccessVolume(rootCA: boolean): KubeObject {
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "p", namespace: "team", uid: "pod-uid" },
    spec: { containers: [{ name: "c", image: "busybox" }] },
  } as KubeObject;
  mutatePodForServiceAccount(pod, { metadata: { name: "default" } } as KubeObject, rootCA);
  return pod;
}

/** The API as the edgelet sees it: the root CA map (when published) and TokenRequest. */
function fakeApi(published: boolean) {
  return {
    get: async (path: string) =>
      published && path === "/api/v1/namespaces/team/configmaps/kube-root-ca.crt"
        ? { status: 200, json: { data: { "ca.crt": CA } } }
        : { status: 404, json: { kind: "Status", code: 404 } },
    request: async () => ({ status: 201, json: { status: { token: "the-token" } } }),
  } as any;
}

async function mount(pod: KubeObject, published: boolean): Promise<string> {
  const podDir = mkdtempSync(join(tmpdir(), "edgelet-sa-vol-"));
  dirs.push(podDir);
  const paths = await setupVolumes({ api: fakeApi(published), pod, podDir, env: { pod } as any });
  return paths.get(pod.spec.volumes[0].name)!;
}

describe("service account volume on the node", () => {
  it("writes token, ca.crt from kube-root-ca.crt, and namespace", async () => {
    const dir = await mount(podWithAccessVolume(true), true);
    expect(readFileSync(join(dir, "ca.crt"), "utf8")).toBe(CA);
    expect(readFileSync(join(dir, "token"), "utf8")).toBe("the-token");
    expect(readFileSync(join(dir, "namespace"), "utf8")).toBe("team");
  });

  it("fails the mount while a required kube-root-ca.crt is missing", async () => {
    await expect(mount(podWithAccessVolume(true), false)).rejects.toThrow(VolumeError);
    await expect(mount(podWithAccessVolume(true), false)).rejects.toThrow(
      'configmap "kube-root-ca.crt" not found',
    );
  });

  it("starts without ca.crt when the map is optional (no root CA configured)", async () => {
    const dir = await mount(podWithAccessVolume(false), false);
    expect(() => readFileSync(join(dir, "ca.crt"))).toThrow();
    expect(readFileSync(join(dir, "namespace"), "utf8")).toBe("team");
  });
});
