// The CSI kinds of storage.k8s.io/v1 through real workerd and kubectl: CSIDriver, CSINode,
// VolumeAttachment and CSIStorageCapacity stored with upstream's defaults, validation (its
// path quirks included) and tables. (A node's own CSINode is in test/e2e/edgelet.)
import { describe, expect, it } from "vitest";
import { api, causes, freshNamespace, hasKubectl, kubectl, shared } from "../helpers/cluster";

const t = shared();
const S = "/apis/storage.k8s.io/v1";
const uniq = () => Math.random().toString(36).slice(2, 7);

const obj = (kind: string, name: string, body: Record<string, unknown>) => ({
  apiVersion: "storage.k8s.io/v1",
  kind,
  metadata: { name },
  ...body,
});

describe("storage.k8s.io/v1 CSI kinds", () => {
  it("defaults and validates CSIDrivers as upstream, attachRequired and modes immutable", async () => {
    const name = `d-${uniq()}.example.com`;
    const made = await api(t, "POST", `${S}/csidrivers`, obj("CSIDriver", name, { spec: {} }));
    expect(made.status, made.text).toBe(201);
    expect(made.json.spec).toEqual({
      attachRequired: true,
      podInfoOnMount: false,
      storageCapacity: false,
      fsGroupPolicy: "ReadWriteOnceWithFSType",
      volumeLifecycleModes: ["Persistent"],
      requiresRepublish: false,
      seLinuxMount: false,
    });
    const bad = obj("CSIDriver", `b-${uniq()}`, {
      spec: {
        fsGroupPolicy: "Sometimes",
        volumeLifecycleModes: ["Forever"],
        tokenRequests: [{ audience: "a", expirationSeconds: 60 }, { audience: "a" }],
      },
    });
    expect(await causes(await api(t, "POST", `${S}/csidrivers`, bad))).toEqual([
      'spec.fsGroupPolicy: Unsupported value: "Sometimes": supported values: "File", "None", "ReadWriteOnceWithFSType"',
      "spec.tokenRequests[0].expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
      'spec.tokenRequests[1].audience: Duplicate value: "a"',
      'spec.volumeLifecycleModes: Unsupported value: "Forever": supported values: "Persistent", "Ephemeral"',
    ]);
    const changed = await api(
      t,
      "PATCH",
      `${S}/csidrivers/${name}`,
      { spec: { attachRequired: false, podInfoOnMount: true } },
      {
        "content-type": "application/merge-patch+json",
      },
    );
    expect(await causes(changed)).toEqual([
      "spec.attachedRequired: Invalid value: false: field is immutable",
    ]);
    if (hasKubectl) {
      const out = await kubectl(t, ["get", "csidriver", name]);
      expect(out.stdout).toMatch(
        new RegExp(
          `^NAME\\s+ATTACHREQUIRED\\s+PODINFOONMOUNT\\s+STORAGECAPACITY\\s+TOKENREQUESTS\\s+REQUIRESREPUBLISH\\s+MODES\\s+AGE\\n${name.replace(/\./g, "\\.")}\\s+true\\s+false\\s+false\\s+<unset>\\s+false\\s+Persistent\\s+\\S+\\n$`,
        ),
      );
    }
    await api(t, "DELETE", `${S}/csidrivers/${name}`);
  });

  it("validates CSINodes, VolumeAttachments and CSIStorageCapacities as upstream", async () => {
    const node = obj("CSINode", `n-${uniq()}`, {
      spec: {
        drivers: [
          { name: "", nodeID: "" },
          { name: "disk.example.com", nodeID: "n1", topologyKeys: ["a", "a"] },
        ],
      },
    });
    expect(await causes(await api(t, "POST", `${S}/csinodes`, node))).toEqual([
      "spec.drivers[0].name: Required value",
      expect.stringMatching(/^spec\.drivers\[0\]\.name: Invalid value: "": a lowercase RFC 1123 subdomain/),
      "spec.drivers[0].nodeID: Required value",
      'spec.drivers[1]: Duplicate value: "a"',
    ]);
    const va = obj("VolumeAttachment", `va-${uniq()}`, {
      spec: { attacher: "disk.example.com", source: {}, nodeName: "n1" },
    });
    expect(await causes(await api(t, "POST", `${S}/volumeattachments`, va))).toEqual([
      "spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName",
    ]);
    const okVa = { ...va, spec: { ...va.spec, source: { persistentVolumeName: "pv-1" } } };
    const made = await api(t, "POST", `${S}/volumeattachments`, okVa);
    expect(made.status, made.text).toBe(201);
    if (hasKubectl) {
      const out = await kubectl(t, ["get", "volumeattachment", okVa.metadata.name]);
      expect(out.stdout).toMatch(
        /^NAME\s+ATTACHER\s+PV\s+NODE\s+ATTACHED\s+AGE\n\S+\s+disk\.example\.com\s+pv-1\s+n1\s+false\s+\S+\n$/,
      );
    }
    await api(t, "DELETE", `${S}/volumeattachments/${okVa.metadata.name}`);
    const ns = await freshNamespace(t);
    const cap = obj("CSIStorageCapacity", "c", { storageClassName: "Fast!", capacity: "-1" });
    expect(await causes(await api(t, "POST", `${S}/namespaces/${ns}/csistoragecapacities`, cap))).toEqual([
      expect.stringMatching(/^storageClassName: Invalid value: "Fast!": a lowercase RFC 1123 subdomain/),
      'capacity: Invalid value: "-1": must be greater than or equal to 0',
    ]);
  });
});
