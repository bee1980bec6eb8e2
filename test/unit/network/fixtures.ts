// Objects for the network tests: Services and EndpointSlices as the API serves them.
export const svc = (name: string, spec: Record<string, unknown>, ns = "ns", status?: unknown): any => ({
  metadata: { namespace: ns, name },
  spec: { type: "ClusterIP", sessionAffinity: "None", ...spec },
  ...(status ? { status } : {}),
});

export interface Ep {
  ip: string;
  node?: string;
  ready?: boolean;
  serving?: boolean;
  terminating?: boolean;
  hostname?: string;
}

export const slice = (service: string, ports: any[], eps: Ep[], ns = "ns", name = `${service}-abc`): any => ({
  metadata: { namespace: ns, name, labels: { "kubernetes.io/service-name": service } },
  addressType: "IPv4",
  ports,
  endpoints: eps.map((e) => ({
    addresses: [e.ip],
    conditions: {
      ready: e.ready ?? true,
      serving: e.serving ?? e.ready ?? true,
      terminating: e.terminating ?? false,
    },
    ...(e.node ? { nodeName: e.node } : {}),
    ...(e.hostname ? { hostname: e.hostname } : {}),
  })),
});
