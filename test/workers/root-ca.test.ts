// The root CA publisher through the real apiserver (workerd) and real kubectl: each namespace
// gets kube-root-ca.crt holding the CA the kubeconfig trusts, and pods' projected service
// account volumes require that map as upstream's do.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { api, freshNamespace, hasKubectl, kubectl, shared, until } from "../helpers/cluster";

const t = shared();

/** The kubeconfig's certificate-authority-data, decoded. */
function kubeconfigCA(): string {
  const m = /certificate-authority-data:\s*(\S+)/.exec(readFileSync(t.kubeconfigPath, "utf8"));
  if (!m) throw new Error("no certificate-authority-data in the kubeconfig");
  return Buffer.from(m[1], "base64").toString("utf8");
}

describe.skipIf(!hasKubectl)("kube-root-ca.crt", () => {
  it("is published in a new namespace with the kubeconfig's CA, and made again when deleted", async () => {
    const ns = await freshNamespace(t, "rootca");
    const get = () => kubectl(t, ["-n", ns, "get", "configmap", "kube-root-ca.crt", "-o", "json"]);
    const cm = await until("kube-root-ca.crt", async () => {
      const r = await get();
      return r.code === 0 && JSON.parse(r.stdout);
    });
    expect(cm.data["ca.crt"]).toBe(kubeconfigCA());
    expect(cm.metadata.annotations["kubernetes.io/description"]).toMatch(
      /^Contains a CA bundle that can be used to verify the kube-apiserver/,
    );

    const del = await kubectl(t, ["-n", ns, "delete", "configmap", "kube-root-ca.crt"]);
    expect(del.stdout).toContain('configmap "kube-root-ca.crt" deleted');
    const again = await until("kube-root-ca.crt again", async () => {
      const r = await get();
      return r.code === 0 && JSON.parse(r.stdout);
    });
    expect(again.metadata.uid).not.toBe(cm.metadata.uid);
    expect(again.data["ca.crt"]).toBe(kubeconfigCA());

    // an edit is put back
    const patch = await kubectl(t, [
      "-n",
      ns,
      "patch",
      "configmap",
      "kube-root-ca.crt",
      "--type=merge",
      "-p",
      '{"data":{"ca.crt":"tampered"}}',
    ]);
    expect(patch.code).toBe(0);
    await until("the CA put back", async () => {
      const r = await get();
      return r.code === 0 && JSON.parse(r.stdout).data["ca.crt"] === kubeconfigCA();
    });
  });

  it("is required by a pod's projected service account volume (no optional)", async () => {
    const ns = await freshNamespace(t, "rootca");
    // the pod needs its namespace's default ServiceAccount; no node runs it here
    await until("default ServiceAccount", async () => {
      const r = await api(t, "GET", `/api/v1/namespaces/${ns}/serviceaccounts/default`);
      return r.status === 200;
    });
    const run = await kubectl(t, ["-n", ns, "run", "p", "--image=busybox", "--restart=Never"]);
    expect(run.stderr).toBe("");
    const pod = JSON.parse((await kubectl(t, ["-n", ns, "get", "pod", "p", "-o", "json"])).stdout);
    const vol = pod.spec.volumes.find((v: any) => v.name.startsWith("kube-api-access-"));
    const source = vol.projected.sources.find((s: any) => s.configMap);
    expect(source.configMap).toEqual({
      name: "kube-root-ca.crt",
      items: [{ key: "ca.crt", path: "ca.crt" }],
    });
  });
});
