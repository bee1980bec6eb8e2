import { describe, expect, it } from "vitest";
import { StatusError } from "../../../api/errors";
import { lookupGVR } from "../../../api/registry";
import {
  createRootCAPublisher,
  DESCRIPTION_ANNOTATION,
  ROOT_CA_DESCRIPTION,
} from "../../../durable-objects/controllers/serviceaccount/root-ca-publisher";
import { FakeCluster } from "./fake";

const CM = lookupGVR("", "v1", "configmaps")!;
const CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const publisher = createRootCAPublisher(CA);

function cluster(): FakeCluster {
  const c = new FakeCluster();
  c.add("/namespaces", { metadata: { name: "team" }, status: { phase: "Active" } });
  return c;
}

const rootMap = (c: FakeCluster, ns = "team") => c.get("/configmaps", `${ns}/kube-root-ca.crt`);

describe("root CA publisher", () => {
  it("publishes kube-root-ca.crt with the CA and upstream's description in each active namespace", async () => {
    const c = cluster();
    c.add("/namespaces", { metadata: { name: "other" }, status: { phase: "Active" } });
    await c.run([publisher]);
    for (const ns of ["team", "other"]) {
      const cm = rootMap(c, ns)!;
      expect(cm.data).toEqual({ "ca.crt": CA });
      expect(cm.metadata.annotations).toEqual({ [DESCRIPTION_ANNOTATION]: ROOT_CA_DESCRIPTION });
    }
    expect(ROOT_CA_DESCRIPTION).toBe(
      "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.",
    );
    // a namespace made later gets its map too
    c.add("/namespaces", { metadata: { name: "late" }, status: { phase: "Active" } });
    await c.run([publisher]);
    expect(rootMap(c, "late")?.data).toEqual({ "ca.crt": CA });
  });

  it("makes the map again when it is deleted", async () => {
    const c = cluster();
    await c.run([publisher]);
    const first = rootMap(c)!;
    await c.api.remove(CM, "team", "kube-root-ca.crt");
    expect(rootMap(c)).toBeUndefined();
    await c.run([publisher]);
    const again = rootMap(c)!;
    expect(again.data).toEqual({ "ca.crt": CA });
    expect(again.metadata.uid).not.toBe(first.metadata.uid);
  });

  it("puts back data and description that were changed, keeping other metadata", async () => {
    const c = cluster();
    await c.run([publisher]);
    const cm = structuredClone(rootMap(c)!);
    cm.data = { "ca.crt": "tampered", extra: "x" };
    cm.metadata.annotations = { mine: "kept" };
    await c.api.update(CM, cm);
    await c.run([publisher]);
    const fixed = rootMap(c)!;
    expect(fixed.data).toEqual({ "ca.crt": CA });
    expect(fixed.metadata.annotations).toEqual({
      mine: "kept",
      [DESCRIPTION_ANNOTATION]: ROOT_CA_DESCRIPTION,
    });
    // already right: no further write
    const writes = c.writes.length;
    await c.run([publisher]);
    expect(c.writes.length).toBe(writes);
  });

  it("creates nothing in a terminating namespace, and takes a NamespaceTerminating refusal calmly", async () => {
    const c = new FakeCluster();
    c.add("/namespaces", {
      metadata: { name: "going", deletionTimestamp: c.iso() },
      status: { phase: "Terminating" },
    });
    await c.run([publisher]);
    expect(rootMap(c, "going")).toBeUndefined();
    expect(c.writes.filter((w) => w.res === "/configmaps")).toHaveLength(0);

    // terminating in the store before the cache knows: the refusal is not an error
    const d = cluster();
    d.failNext = {
      verb: "create",
      error: new StatusError(403, "Forbidden", "namespace team is being terminated", {
        causes: [{ type: "NamespaceTerminating", message: "namespace team is being terminated" }],
      }),
    };
    await expect(publisher.sync("team", d.ctx())).resolves.toBeUndefined();
    expect(rootMap(d)).toBeUndefined();
  });
});
