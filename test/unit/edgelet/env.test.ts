import { describe, expect, it } from "vitest";
import { ConfigError, expand, expandCommand, formatMap, resolveEnv } from "../../../agent/edgelet/env";

const pod = {
  metadata: {
    name: "p",
    namespace: "ns",
    uid: "u-1",
    labels: { b: "2", a: "1" },
    annotations: { note: 'say "hi"' },
  },
  spec: {
    nodeName: "n1",
    serviceAccountName: "sa",
    containers: [
      { name: "c", resources: { limits: { cpu: "1500m", memory: "64Mi" }, requests: { memory: "32Mi" } } },
    ],
  },
};
const cms: Record<string, any> = { cfg: { data: { A: "from-cm", B: "b" } } };
const secrets: Record<string, any> = { sec: { data: { PASS: Buffer.from("pw").toString("base64") } } };
const lookups = {
  configMap: async (_ns: string, n: string) => cms[n],
  secret: async (_ns: string, n: string) => secrets[n],
};
const base = {
  pod,
  podIP: "10.88.0.7",
  hostIP: "192.0.2.2",
  nodeName: "n1",
  allocatable: { cpu: "2", memory: "4Gi" },
};

describe("expand", () => {
  it("expands $(VAR), keeps unknown references, and unescapes $$", () => {
    const vars = new Map([["A", "x"]]);
    expect(expand("$(A)-$(B)-$$(A)-$$", vars)).toBe("x-$(B)-$(A)-$");
    expect(expand("$(A", vars)).toBe("$(A");
  });
});

describe("resolveEnv", () => {
  it("resolves envFrom, values, fieldRef, resourceFieldRef, configMap and secret keys in order", async () => {
    const env = await resolveEnv(
      {
        ...base,
        container: {
          name: "c",
          envFrom: [{ configMapRef: { name: "cfg" }, prefix: "CM_" }, { secretRef: { name: "sec" } }],
          env: [
            { name: "NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
            { name: "UID", valueFrom: { fieldRef: { fieldPath: "metadata.uid" } } },
            { name: "LABEL_A", valueFrom: { fieldRef: { fieldPath: "metadata.labels['a']" } } },
            { name: "IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
            { name: "HOST", valueFrom: { fieldRef: { fieldPath: "status.hostIP" } } },
            { name: "NODE", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } },
            { name: "SA", valueFrom: { fieldRef: { fieldPath: "spec.serviceAccountName" } } },
            { name: "CPU", valueFrom: { resourceFieldRef: { resource: "limits.cpu" } } },
            { name: "CPU_M", valueFrom: { resourceFieldRef: { resource: "limits.cpu", divisor: "1m" } } },
            {
              name: "MEM_MI",
              valueFrom: { resourceFieldRef: { resource: "requests.memory", divisor: "1Mi" } },
            },
            { name: "A", valueFrom: { configMapKeyRef: { name: "cfg", key: "A" } } },
            { name: "P", valueFrom: { secretKeyRef: { name: "sec", key: "PASS" } } },
            { name: "GREETING", value: "hi $(NAME) on $(NODE)" },
            { name: "OPT", valueFrom: { configMapKeyRef: { name: "missing", key: "x", optional: true } } },
          ],
        },
      },
      lookups,
    );
    const m = Object.fromEntries(env.map((e) => [e.key, e.value]));
    expect(m).toEqual({
      CM_A: "from-cm",
      CM_B: "b",
      PASS: "pw",
      NAME: "p",
      UID: "u-1",
      LABEL_A: "1",
      IP: "10.88.0.7",
      HOST: "192.0.2.2",
      NODE: "n1",
      SA: "sa",
      CPU: "2",
      CPU_M: "1500",
      MEM_MI: "32",
      A: "from-cm",
      P: "pw",
      GREETING: "hi p on n1",
    });
  });

  it("fails with the upstream messages when a referenced object or key is missing", async () => {
    const run = (env: any[]) => resolveEnv({ ...base, container: { name: "c", env } }, lookups);
    await expect(
      run([{ name: "X", valueFrom: { configMapKeyRef: { name: "nope", key: "k" } } }]),
    ).rejects.toThrow('configmap "nope" not found');
    await expect(
      run([{ name: "X", valueFrom: { secretKeyRef: { name: "sec", key: "k" } } }]),
    ).rejects.toThrow("couldn't find key k in Secret ns/sec");
    await expect(
      run([{ name: "X", valueFrom: { fieldRef: { fieldPath: "spec.bogus" } } }]),
    ).rejects.toBeInstanceOf(ConfigError);
  });

  it("falls back to node allocatable for an unset limit", async () => {
    const env = await resolveEnv(
      {
        ...base,
        pod: { ...pod, spec: { containers: [{ name: "c" }] } },
        container: {
          name: "c",
          env: [
            { name: "M", valueFrom: { resourceFieldRef: { resource: "limits.memory", divisor: "1Mi" } } },
          ],
        },
      },
      lookups,
    );
    expect(env).toEqual([{ key: "M", value: "4096" }]);
  });

  it("formats label maps and expands commands", () => {
    expect(formatMap(pod.metadata.labels)).toBe('a="1"\nb="2"');
    expect(formatMap(pod.metadata.annotations)).toBe('note="say \\"hi\\""');
    expect(expandCommand(["echo", "$(A)", "$$(A)"], [{ key: "A", value: "1" }])).toEqual([
      "echo",
      "1",
      "$(A)",
    ]);
  });
});
