import { describe, expect, it } from "vitest";
import { findResource } from "../../../api/strategies";
import { imageTag } from "../../../api/strategies/pod-defaults";
import { summarizePod } from "../../../api/strategies/pod-table";
import { podQOSClass, validatePodBinding } from "../../../api/strategies/pods";
import type { KubeObject } from "../../../api/types";

const def = findResource("", "v1", "pods")!;
const s = def.strategy;
const pod = (spec: Record<string, any>, extra: Partial<KubeObject> = {}): KubeObject => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: "web", namespace: "default" },
  spec,
  ...extra,
});

describe("pod defaults", () => {
  it("applies upstream's SetDefaults", () => {
    const p = pod({
      containers: [
        {
          name: "c",
          image: "nginx",
          ports: [{ containerPort: 80 }],
          resources: { limits: { cpu: "1" } },
          livenessProbe: { httpGet: { port: 80 } },
        },
        { name: "d", image: "busybox:1.36" },
      ],
      volumes: [
        { name: "a" },
        { name: "b", configMap: { name: "cm" } },
        { name: "h", hostPath: { path: "/x" } },
      ],
    });
    s.defaults!(p);
    expect(p.spec).toMatchObject({
      restartPolicy: "Always",
      dnsPolicy: "ClusterFirst",
      terminationGracePeriodSeconds: 30,
      schedulerName: "default-scheduler",
      securityContext: {},
      enableServiceLinks: true,
    });
    const [c, d] = p.spec.containers;
    expect(c.imagePullPolicy).toBe("Always");
    expect(d.imagePullPolicy).toBe("IfNotPresent");
    expect(c.terminationMessagePath).toBe("/dev/termination-log");
    expect(c.terminationMessagePolicy).toBe("File");
    expect(c.ports[0].protocol).toBe("TCP");
    expect(c.resources.requests).toEqual({ cpu: "1" });
    expect(d.resources).toEqual({});
    expect(c.livenessProbe).toEqual({
      httpGet: { port: 80, path: "/", scheme: "HTTP" },
      timeoutSeconds: 1,
      periodSeconds: 10,
      successThreshold: 1,
      failureThreshold: 3,
    });
    expect(p.spec.volumes).toEqual([
      { name: "a", emptyDir: {} },
      { name: "b", configMap: { name: "cm", defaultMode: 420 } },
      { name: "h", hostPath: { path: "/x", type: "" } },
    ]);
  });

  it("defaults gRPC probes' service", () => {
    const p = pod({ containers: [{ name: "c", image: "x", readinessProbe: { grpc: { port: 9000 } } }] });
    s.defaults!(p);
    expect(p.spec.containers[0].readinessProbe.grpc).toEqual({ port: 9000, service: "" });
  });

  it("reads image tags like the reference parser", () => {
    expect(imageTag("nginx")).toBe("latest");
    expect(imageTag("localhost:5000/a/b")).toBe("latest");
    expect(imageTag("localhost:5000/a/b:1")).toBe("1");
    expect(imageTag("a@sha256:abc")).toBe("");
  });

  it("prepareForCreate sets Pending and the QoS class (priority is the Priority admission plugin's)", () => {
    const p = pod({
      containers: [{ name: "c", image: "x", resources: { limits: { cpu: "1", memory: "1Gi" } } }],
    });
    s.defaults!(p);
    s.prepareForCreate!(p);
    expect(p.status).toEqual({ phase: "Pending", qosClass: "Guaranteed" });
    expect(p.spec.priority).toBeUndefined();
  });
});

describe("pod QoS", () => {
  it("classifies", () => {
    expect(podQOSClass(pod({ containers: [{ name: "c" }] }))).toBe("BestEffort");
    expect(podQOSClass(pod({ containers: [{ name: "c", resources: { requests: { cpu: "100m" } } }] }))).toBe(
      "Burstable",
    );
    expect(
      podQOSClass(
        pod({
          containers: [
            {
              name: "c",
              resources: { requests: { cpu: "1", memory: "1Gi" }, limits: { cpu: "1000m", memory: "1Gi" } },
            },
          ],
        }),
      ),
    ).toBe("Guaranteed");
  });
});

describe("pod validation", () => {
  const valid = () => {
    const p = pod({ containers: [{ name: "c", image: "nginx" }] });
    s.defaults!(p);
    return p;
  };

  it("accepts a defaulted pod", () => {
    expect(s.validate!(valid())).toEqual([]);
  });

  it("requires containers", () => {
    const p = valid();
    p.spec.containers = [];
    expect(s.validate!(p)).toEqual([
      { type: "FieldValueRequired", field: "spec.containers", message: "Required value" },
    ]);
  });

  it("checks names, images, ports, mounts and restart policy", () => {
    const p = valid();
    p.spec.containers = [
      {
        name: "c",
        image: "",
        ports: [{ containerPort: 70000, protocol: "TCP" }],
        volumeMounts: [{ name: "nope", mountPath: "/x" }],
      },
      { name: "c", image: "x" },
      { name: "Bad_Name", image: "x" },
    ];
    p.spec.restartPolicy = "Sometimes";
    const causes = s.validate!(p);
    const byField = Object.fromEntries(causes.map((c) => [c.field, c.message]));
    expect(byField["spec.containers[0].image"]).toBe("Required value");
    expect(byField["spec.containers[0].ports[0].containerPort"]).toBe(
      "Invalid value: 70000: must be between 1 and 65535, inclusive",
    );
    expect(byField["spec.containers[0].volumeMounts[0].name"]).toBe('Not found: "nope"');
    expect(byField["spec.containers[1].name"]).toBe('Duplicate value: "c"');
    expect(byField["spec.containers[2].name"]).toMatch(
      /^Invalid value: "Bad_Name": a lowercase RFC 1123 label/,
    );
    expect(byField["spec.restartPolicy"]).toBe(
      'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
    );
  });

  it("checks probes, env names and tolerations", () => {
    const p = valid();
    p.spec.containers[0].livenessProbe = { periodSeconds: 10, successThreshold: 2 };
    p.spec.containers[0].readinessProbe = { httpGet: { port: 0 } };
    p.spec.containers[0].env = [{ name: "A=B", value: "x" }];
    p.spec.tolerations = [
      { operator: "Equal", value: "x" },
      { key: "k", operator: "Exists", value: "v" },
    ];
    s.defaults!(p);
    const f = Object.fromEntries(s.validate!(p).map((c) => [c.field, c.message]));
    expect(f["spec.containers[0].livenessProbe"]).toBe("Required value: must specify a handler type");
    expect(f["spec.containers[0].livenessProbe.successThreshold"]).toBe("Invalid value: 2: must be 1");
    expect(f["spec.containers[0].readinessProbe.httpGet.port"]).toBe(
      "Invalid value: 0: must be between 1 and 65535, inclusive",
    );
    expect(f["spec.containers[0].env[0].name"]).toMatch(/printable ASCII characters other than '='$/);
    expect(f["spec.tolerations[0].operator"]).toBe(
      'Invalid value: "Equal": operator must be Exists when `key` is empty, which means "match all values and all keys"',
    );
    expect(f["spec.tolerations[1].operator"]).toMatch(/value must be empty when `operator` is 'Exists'$/);
  });

  it("rejects duplicate volumes", () => {
    const p = valid();
    p.spec.volumes = [
      { name: "v", emptyDir: {} },
      { name: "v", emptyDir: {} },
    ];
    expect(s.validate!(p)).toEqual([
      { type: "FieldValueDuplicate", field: "spec.volumes[1].name", message: 'Duplicate value: "v"' },
    ]);
  });

  it("treats null and empty lists like absent fields on update", () => {
    const old = valid();
    const next = structuredClone(old);
    next.spec.nodeSelector = null;
    next.spec.tolerations = [];
    expect(s.validate!(next, old)).toEqual([]);
  });

  it("allows image changes on update but not other spec fields", () => {
    const old = valid();
    const next = structuredClone(old);
    next.spec.containers[0].image = "nginx:2";
    next.spec.activeDeadlineSeconds = 30;
    next.spec.tolerations = [{ key: "k", operator: "Exists" }];
    expect(s.validate!(next, old)).toEqual([]);
    const bad = structuredClone(old);
    bad.spec.restartPolicy = "Never";
    const causes = s.validate!(bad, old);
    expect(causes).toHaveLength(1);
    expect(causes[0].field).toBe("spec");
    expect(causes[0].message).toMatch(
      /^Forbidden: pod updates may not change fields other than `spec.containers\[\*\].image`,`spec.initContainers\[\*\].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` \(only additions to existing tolerations\),`spec.terminationGracePeriodSeconds` \(allow it to be set to 1 if it was previously negative\)\n/,
    );
    expect(causes[0].message).toContain("restartPolicy");
  });
});

describe("pod table", () => {
  const now = Date.parse("2026-01-01T00:10:00Z");
  const cells = (p: KubeObject) => s.columns!.map((c) => c.cell(p, now));

  it("has upstream's columns", () => {
    expect(s.columns!.map((c) => `${c.name}:${c.priority}`)).toEqual([
      "Name:0",
      "Ready:0",
      "Status:0",
      "Restarts:0",
      "Age:0",
      "IP:1",
      "Node:1",
      "Nominated Node:1",
      "Readiness Gates:1",
    ]);
  });

  it("prints a pending pod", () => {
    const p = pod({ containers: [{ name: "c" }] }, { status: { phase: "Pending" } });
    p.metadata.creationTimestamp = "2026-01-01T00:05:00Z";
    expect(cells(p)).toEqual(["web", "0/1", "Pending", "0", "5m", "<none>", "<none>", "<none>", "<none>"]);
  });

  it("prints a running pod with restarts", () => {
    const p = pod(
      { containers: [{ name: "a" }, { name: "b" }], nodeName: "n1" },
      {
        status: {
          phase: "Running",
          podIPs: [{ ip: "10.0.0.5" }],
          containerStatuses: [
            {
              name: "a",
              ready: true,
              restartCount: 2,
              state: { running: {} },
              lastState: { terminated: { finishedAt: "2026-01-01T00:07:00Z" } },
            },
            { name: "b", ready: true, restartCount: 0, state: { running: {} } },
          ],
        },
      },
    );
    expect(summarizePod(p, now)).toEqual({ ready: "2/2", status: "Running", restarts: "2 (3m ago)" });
    expect(cells(p).slice(5, 7)).toEqual(["10.0.0.5", "n1"]);
  });

  it("shows waiting reasons", () => {
    const p = pod(
      { containers: [{ name: "a" }] },
      {
        status: {
          phase: "Pending",
          containerStatuses: [{ name: "a", state: { waiting: { reason: "ContainerCreating" } } }],
        },
      },
    );
    expect(summarizePod(p, now).status).toBe("ContainerCreating");
    p.status.containerStatuses[0].state = { waiting: { reason: "CrashLoopBackOff" } };
    expect(summarizePod(p, now).status).toBe("CrashLoopBackOff");
  });

  it("shows init container progress", () => {
    const p = pod(
      { initContainers: [{ name: "i1" }, { name: "i2" }], containers: [{ name: "a" }] },
      {
        status: {
          phase: "Pending",
          initContainerStatuses: [
            { name: "i1", state: { terminated: { exitCode: 0, reason: "Completed" } } },
            { name: "i2", state: { running: {} } },
          ],
          containerStatuses: [{ name: "a", state: { waiting: { reason: "PodInitializing" } } }],
        },
      },
    );
    expect(summarizePod(p, now).status).toBe("Init:1/2");
    p.status.initContainerStatuses[1].state = { waiting: { reason: "ImagePullBackOff" } };
    expect(summarizePod(p, now).status).toBe("Init:ImagePullBackOff");
    p.status.initContainerStatuses[1].state = { terminated: { exitCode: 3 } };
    expect(summarizePod(p, now).status).toBe("Init:ExitCode:3");
    p.status.initContainerStatuses[1].state = { terminated: { exitCode: 0, reason: "Completed" } };
    expect(summarizePod(p, now).status).toBe("PodInitializing");
  });

  it("shows Completed, Error and Terminating", () => {
    const done = pod(
      { containers: [{ name: "a" }] },
      {
        status: {
          phase: "Succeeded",
          containerStatuses: [{ name: "a", state: { terminated: { exitCode: 0, reason: "Completed" } } }],
        },
      },
    );
    expect(summarizePod(done, now).status).toBe("Completed");
    const failed = pod(
      { containers: [{ name: "a" }] },
      {
        status: {
          phase: "Failed",
          containerStatuses: [{ name: "a", state: { terminated: { exitCode: 137, signal: 9 } } }],
        },
      },
    );
    expect(summarizePod(failed, now).status).toBe("Signal:9");
    const running = pod(
      { containers: [{ name: "a" }] },
      {
        status: { phase: "Running", containerStatuses: [{ name: "a", ready: true, state: { running: {} } }] },
      },
    );
    running.metadata.deletionTimestamp = "2026-01-01T00:09:00Z";
    expect(summarizePod(running, now).status).toBe("Terminating");
    done.metadata.deletionTimestamp = "2026-01-01T00:09:00Z";
    expect(summarizePod(done, now).status).toBe("Completed");
  });

  it("counts ready sidecars", () => {
    const p = pod(
      { initContainers: [{ name: "side", restartPolicy: "Always" }], containers: [{ name: "a" }] },
      {
        status: {
          phase: "Running",
          conditions: [{ type: "Initialized", status: "True" }],
          initContainerStatuses: [{ name: "side", started: true, ready: true, state: { running: {} } }],
          containerStatuses: [{ name: "a", ready: true, state: { running: {} } }],
        },
      },
    );
    expect(summarizePod(p, now)).toEqual({ ready: "2/2", status: "Running", restarts: "0" });
  });
});

describe("pod fields", () => {
  it("exposes upstream's selectable fields", () => {
    const p = pod(
      {
        nodeName: "n1",
        restartPolicy: "Always",
        schedulerName: "default-scheduler",
        serviceAccountName: "default",
      },
      { status: { phase: "Running", podIP: "10.0.0.1" } },
    );
    expect(s.fields!(p)).toEqual({
      "spec.nodeName": "n1",
      "spec.restartPolicy": "Always",
      "spec.schedulerName": "default-scheduler",
      "spec.serviceAccountName": "default",
      "spec.hostNetwork": "false",
      "status.phase": "Running",
      "status.podIP": "10.0.0.1",
      "status.nominatedNodeName": "",
    });
  });
});

describe("pod binding", () => {
  it("needs a node target", () => {
    expect(validatePodBinding({ metadata: { name: "web" }, target: { kind: "Node", name: "n1" } })).toEqual(
      [],
    );
    expect(validatePodBinding({ metadata: { name: "web" }, target: {} })).toEqual([
      { type: "FieldValueRequired", field: "target.name", message: "Required value" },
    ]);
  });
});
