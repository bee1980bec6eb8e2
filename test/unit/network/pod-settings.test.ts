// What a pod gets from the node's network: the kubelet's DNS settings by dnsPolicy and
// dnsConfig, and the Service environment variables (pkg/kubelet/envvars).
import { describe, expect, it } from "vitest";
import { resolveEnv } from "../../../agent/edgelet/env";
import { dnsConfig } from "../../../agent/edgelet/specs";
import { serviceEnvVars, servicesForPod } from "../../../agent/network/service-env";
import { svc } from "./fixtures";

const host = "nameserver 192.0.2.53\nnameserver 127.0.0.53\nsearch corp.example\noptions edns0 timeout:2\n";
const cluster = { server: "10.96.0.10", domain: "cluster.local" };
const pod = (spec: any = {}) => ({ metadata: { name: "p", namespace: "ns" }, spec });

describe("pod DNS settings (the kubelet's getPodDNS)", () => {
  it("ClusterFirst: the cluster server, the cluster search path before the host's, ndots:5", () => {
    expect(dnsConfig(pod(), host, cluster)).toEqual({
      servers: ["10.96.0.10"],
      searches: ["ns.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"],
      options: ["ndots:5"],
    });
  });

  it("a hostNetwork pod gets the host's unless it asks ClusterFirstWithHostNet; Default is the host's", () => {
    const hostConf = { servers: ["192.0.2.53"], searches: ["corp.example"], options: ["edns0", "timeout:2"] };
    expect(dnsConfig(pod({ hostNetwork: true }), host, cluster)).toEqual(hostConf);
    expect(dnsConfig(pod({ dnsPolicy: "Default" }), host, cluster)).toEqual(hostConf);
    expect(
      dnsConfig(pod({ hostNetwork: true, dnsPolicy: "ClusterFirstWithHostNet" }), host, cluster).servers,
    ).toEqual(["10.96.0.10"]);
    // a node without cluster DNS falls back to the host's
    expect(dnsConfig(pod(), host, undefined)).toEqual(hostConf);
  });

  it("None takes dnsConfig alone; dnsConfig is merged into the others, options replaced by name", () => {
    const dc = {
      nameservers: ["198.51.100.1"],
      searches: ["a.example"],
      options: [{ name: "ndots", value: "2" }, { name: "rotate" }],
    };
    expect(dnsConfig(pod({ dnsPolicy: "None", dnsConfig: dc }), host, cluster)).toEqual({
      servers: ["198.51.100.1"],
      searches: ["a.example"],
      options: ["ndots:2", "rotate"],
    });
    expect(dnsConfig(pod({ dnsConfig: dc }), host, cluster)).toEqual({
      servers: ["10.96.0.10", "198.51.100.1"],
      searches: ["ns.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "a.example"],
      options: ["ndots:2", "rotate"],
    });
  });
});

const services = [
  svc(
    "kubernetes",
    { clusterIP: "10.96.0.1", ports: [{ name: "https", port: 443, protocol: "TCP" }] },
    "default",
  ),
  svc("redis-primary", {
    clusterIP: "10.96.0.30",
    ports: [
      { name: "redis", port: 6379, protocol: "TCP" },
      { port: 6380, protocol: "UDP" },
    ],
  }),
  svc("headless", { clusterIP: "None", ports: [{ port: 80 }] }),
  svc("other", { clusterIP: "10.96.0.31", ports: [{ port: 80, protocol: "TCP" }] }, "elsewhere"),
];

describe("Service environment variables", () => {
  it("are the kubelet's, for the pod's namespace and the kubernetes Service", () => {
    const env = Object.fromEntries(
      serviceEnvVars(servicesForPod(services, "ns", true)).map((e) => [e.key, e.value]),
    );
    expect(env).toEqual({
      KUBERNETES_SERVICE_HOST: "10.96.0.1",
      KUBERNETES_SERVICE_PORT: "443",
      KUBERNETES_SERVICE_PORT_HTTPS: "443",
      KUBERNETES_PORT: "tcp://10.96.0.1:443",
      KUBERNETES_PORT_443_TCP: "tcp://10.96.0.1:443",
      KUBERNETES_PORT_443_TCP_PROTO: "tcp",
      KUBERNETES_PORT_443_TCP_PORT: "443",
      KUBERNETES_PORT_443_TCP_ADDR: "10.96.0.1",
      REDIS_PRIMARY_SERVICE_HOST: "10.96.0.30",
      REDIS_PRIMARY_SERVICE_PORT: "6379",
      REDIS_PRIMARY_SERVICE_PORT_REDIS: "6379",
      REDIS_PRIMARY_PORT: "tcp://10.96.0.30:6379",
      REDIS_PRIMARY_PORT_6379_TCP: "tcp://10.96.0.30:6379",
      REDIS_PRIMARY_PORT_6379_TCP_PROTO: "tcp",
      REDIS_PRIMARY_PORT_6379_TCP_PORT: "6379",
      REDIS_PRIMARY_PORT_6379_TCP_ADDR: "10.96.0.30",
      REDIS_PRIMARY_PORT_6380_UDP: "udp://10.96.0.30:6380",
      REDIS_PRIMARY_PORT_6380_UDP_PROTO: "udp",
      REDIS_PRIMARY_PORT_6380_UDP_PORT: "6380",
      REDIS_PRIMARY_PORT_6380_UDP_ADDR: "10.96.0.30",
    });
  });

  it("enableServiceLinks false keeps only the kubernetes Service's", () => {
    const keys = serviceEnvVars(servicesForPod(services, "ns", false)).map((e) => e.key);
    expect(keys.every((k) => k.startsWith("KUBERNETES_"))).toBe(true);
    expect(keys).toHaveLength(8);
  });

  it("follow the container's own variables, which win and may refer to them", async () => {
    const serviceEnv = serviceEnvVars(servicesForPod(services, "ns", true));
    const env = await resolveEnv(
      {
        pod: { metadata: { namespace: "ns" }, spec: {} },
        container: {
          name: "c",
          env: [
            { name: "KUBERNETES_SERVICE_PORT", value: "8443" },
            {
              name: "REDIS_URL",
              value: "redis://$(REDIS_PRIMARY_SERVICE_HOST):$(REDIS_PRIMARY_SERVICE_PORT)",
            },
          ],
        },
        hostIP: "192.0.2.2",
        nodeName: "n1",
        allocatable: { cpu: "2", memory: "1Gi" },
        serviceEnv,
      },
      { configMap: async () => undefined, secret: async () => undefined },
    );
    expect(env.slice(0, 2)).toEqual([
      { key: "KUBERNETES_SERVICE_PORT", value: "8443" },
      { key: "REDIS_URL", value: "redis://10.96.0.30:6379" },
    ]);
    expect(env.filter((e) => e.key === "KUBERNETES_SERVICE_PORT")).toHaveLength(1);
    expect(env.some((e) => e.key === "REDIS_PRIMARY_PORT")).toBe(true);
  });
});
