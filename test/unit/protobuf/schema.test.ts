// Consistency of the generated message tables.
import { describe, expect, it } from "vitest";
import { SPECIAL_MESSAGE_TYPES } from "../../../api/protobuf/decode";
import { allMessageNames, isScalar, lookupMessage, messageForKind } from "../../../api/protobuf/schema/index";

const special = new Set<string>(SPECIAL_MESSAGE_TYPES);

describe("protobuf message tables", () => {
  const names = allMessageNames();

  it("parse, resolve every referenced type and have unique field numbers and JSON names", () => {
    const problems: string[] = [];
    for (const name of names) {
      const spec = lookupMessage(name);
      if (!spec) {
        problems.push(`${name}: does not parse`);
        continue;
      }
      const types = spec.listOf ? [spec.listOf] : spec.fields.map((f) => f.type);
      for (const t of types) {
        if (!isScalar(t) && !special.has(t) && !lookupMessage(t)) problems.push(`${name}: unknown type ${t}`);
      }
      const numbers = spec.fields.map((f) => f.number);
      if (new Set(numbers).size !== numbers.length) problems.push(`${name}: duplicate field number`);
      const json = spec.fields.filter((f) => !f.inline).map((f) => f.jsonName);
      if (new Set(json).size !== json.length) problems.push(`${name}: duplicate JSON name`);
    }
    expect(problems).toEqual([]);
    expect(names.length).toBeGreaterThan(400);
  });

  it("covers the kinds typed clients send", () => {
    const kinds: [string, string][] = [
      ["v1", "Namespace"],
      ["v1", "ConfigMap"],
      ["v1", "Secret"],
      ["v1", "ServiceAccount"],
      ["v1", "Service"],
      ["v1", "Pod"],
      ["v1", "ResourceQuota"],
      ["v1", "LimitRange"],
      ["v1", "Binding"],
      ["v1", "Event"],
      ["v1", "Endpoints"],
      ["v1", "Node"],
      ["v1", "DeleteOptions"],
      ["apps/v1", "Deployment"],
      ["apps/v1", "ReplicaSet"],
      ["apps/v1", "StatefulSet"],
      ["apps/v1", "DaemonSet"],
      ["batch/v1", "Job"],
      ["batch/v1", "CronJob"],
      ["rbac.authorization.k8s.io/v1", "Role"],
      ["rbac.authorization.k8s.io/v1", "ClusterRole"],
      ["rbac.authorization.k8s.io/v1", "RoleBinding"],
      ["rbac.authorization.k8s.io/v1", "ClusterRoleBinding"],
      ["authorization.k8s.io/v1", "SelfSubjectAccessReview"],
      ["authorization.k8s.io/v1", "SelfSubjectRulesReview"],
      ["authorization.k8s.io/v1", "SubjectAccessReview"],
      ["authentication.k8s.io/v1", "TokenRequest"],
      ["authentication.k8s.io/v1", "TokenReview"],
      ["authentication.k8s.io/v1", "SelfSubjectReview"],
      ["policy/v1", "Eviction"],
      ["policy/v1", "PodDisruptionBudget"],
      ["coordination.k8s.io/v1", "Lease"],
      ["autoscaling/v1", "Scale"],
      ["autoscaling/v1", "HorizontalPodAutoscaler"],
      ["autoscaling/v2", "HorizontalPodAutoscaler"],
      ["networking.k8s.io/v1", "Ingress"],
      ["scheduling.k8s.io/v1", "PriorityClass"],
      ["certificates.k8s.io/v1", "CertificateSigningRequest"],
      ["discovery.k8s.io/v1", "EndpointSlice"],
      ["events.k8s.io/v1", "Event"],
      ["storage.k8s.io/v1", "StorageClass"],
    ];
    const missing = kinds.filter(([v, k]) => !messageForKind(v, k)).map(([v, k]) => `${v} ${k}`);
    expect(missing).toEqual([]);
  });

  it("records upstream facts the decoder relies on", () => {
    const field = (msg: string, json: string) => lookupMessage(msg)!.fields.find((f) => f.jsonName === json)!;
    expect(field("apps.v1.DeploymentSpec", "replicas")).toMatchObject({
      number: 1,
      type: "int32",
      pointer: true,
    });
    expect(field("core.v1.Secret", "data")).toMatchObject({ number: 2, mapKey: "string", type: "bytes" });
    expect(field("meta.v1.ObjectMeta", "creationTimestamp")).toMatchObject({
      number: 8,
      type: "meta.v1.Time",
    });
    expect(field("authentication.v1.BoundObjectReference", "uid")).toMatchObject({ number: 4 });
    expect(lookupMessage("core.v1.Volume")!.byNumber.get(2)).toMatchObject({
      inline: true,
      type: "core.v1.VolumeSource",
    });
    expect(lookupMessage("authentication.v1.ExtraValue")!.listOf).toBe("string");
  });
});
