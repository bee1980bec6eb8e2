// ServiceAccount and DefaultTolerationSeconds mutations, as pure functions.
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../api/types";
import { addDefaultTolerations } from "../../../workers/admission/default-toleration-seconds";
import {
  mutatePodForServiceAccount,
  rootCAPublished,
  TOKEN_MOUNT_PATH,
} from "../../../workers/admission/service-account";

const pod = (spec: any = {}): KubeObject =>
  ({ apiVersion: "v1", kind: "Pod", metadata: { name: "p", namespace: "ns" }, spec }) as KubeObject;

describe("ServiceAccount mutation", () => {
  it("defaults the account and mounts the projected token volume in every container", () => {
    const p = pod({ initContainers: [{ name: "i" }], containers: [{ name: "a" }, { name: "b" }] });
    mutatePodForServiceAccount(p, { metadata: { name: "default" } } as KubeObject, true);
    expect(p.spec.serviceAccountName).toBe("default");
    expect(p.spec.volumes).toHaveLength(1);
    const v = p.spec.volumes[0];
    expect(v.name).toMatch(/^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    expect(v.projected.sources[0].serviceAccountToken.expirationSeconds).toBe(3607);
    // with the root CA published the map is required, as upstream leaves optional unset
    expect(v.projected.sources[1].configMap).toEqual({
      name: "kube-root-ca.crt",
      items: [{ key: "ca.crt", path: "ca.crt" }],
    });
    expect(v.projected.sources[2].downwardAPI.items[0].fieldRef.fieldPath).toBe("metadata.namespace");
    for (const c of [...p.spec.initContainers, ...p.spec.containers])
      expect(c.volumeMounts).toEqual([{ name: v.name, readOnly: true, mountPath: TOKEN_MOUNT_PATH }]);
  });

  it("makes kube-root-ca.crt optional only when no root CA is published", () => {
    const p = pod({ containers: [{ name: "a" }] });
    mutatePodForServiceAccount(p, { metadata: { name: "default" } } as KubeObject, false);
    expect(p.spec.volumes[0].projected.sources[1].configMap).toMatchObject({
      name: "kube-root-ca.crt",
      optional: true,
    });
    expect(rootCAPublished({ EDGEPLANE_ROOT_CA: "-----BEGIN CERTIFICATE-----\n" })).toBe(true);
    expect(rootCAPublished({})).toBe(false);
    expect(rootCAPublished({ EDGEPLANE_ROOT_CA: "" })).toBe(false);
  });

  it("mounts nothing when the pod or the account turns automounting off", () => {
    const p1 = pod({ automountServiceAccountToken: false, containers: [{ name: "a" }] });
    mutatePodForServiceAccount(p1, undefined, true);
    expect(p1.spec.volumes ?? []).toHaveLength(0);
    const p2 = pod({ serviceAccountName: "robot", containers: [{ name: "a" }] });
    mutatePodForServiceAccount(
      p2,
      {
        metadata: { name: "robot" },
        automountServiceAccountToken: false,
      } as any,
      true,
    );
    expect(p2.spec.serviceAccountName).toBe("robot");
    expect(p2.spec.volumes ?? []).toHaveLength(0);
    // the pod's own setting wins over the account's
    const p3 = pod({ automountServiceAccountToken: true, containers: [{ name: "a" }] });
    mutatePodForServiceAccount(
      p3,
      {
        metadata: { name: "default" },
        automountServiceAccountToken: false,
      } as any,
      true,
    );
    expect(p3.spec.volumes).toHaveLength(1);
  });

  it("leaves a container that already mounts the token path alone", () => {
    const own = { name: "mine", mountPath: TOKEN_MOUNT_PATH };
    const p = pod({ containers: [{ name: "a", volumeMounts: [own] }] });
    mutatePodForServiceAccount(p, undefined, true);
    expect(p.spec.containers[0].volumeMounts).toEqual([own]);
    expect(p.spec.volumes ?? []).toHaveLength(0);
  });
});

describe("DefaultTolerationSeconds", () => {
  it("adds not-ready and unreachable NoExecute tolerations of 300 s", () => {
    const p = pod({ containers: [{ name: "a" }] });
    addDefaultTolerations(p);
    expect(p.spec.tolerations).toEqual([
      {
        key: "node.kubernetes.io/not-ready",
        operator: "Exists",
        effect: "NoExecute",
        tolerationSeconds: 300,
      },
      {
        key: "node.kubernetes.io/unreachable",
        operator: "Exists",
        effect: "NoExecute",
        tolerationSeconds: 300,
      },
    ]);
  });

  it("keeps a pod's own toleration for a key", () => {
    const mine = {
      key: "node.kubernetes.io/unreachable",
      operator: "Exists",
      effect: "NoExecute",
      tolerationSeconds: 5,
    };
    const p = pod({ tolerations: [mine] });
    addDefaultTolerations(p, 60);
    expect(p.spec.tolerations).toEqual([
      mine,
      { key: "node.kubernetes.io/not-ready", operator: "Exists", effect: "NoExecute", tolerationSeconds: 60 },
    ]);
    const all = pod({ tolerations: [{ operator: "Exists" }] });
    addDefaultTolerations(all);
    expect(all.spec.tolerations).toEqual([{ operator: "Exists" }]);
  });
});
