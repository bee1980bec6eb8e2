// networking.k8s.io/v1 through real workerd and kubectl: Ingresses, IngressClasses and
// NetworkPolicies are stored with upstream's defaults and validation, and printed with its
// columns. (No ingress controller or network plugin acts on them here.)
import { describe, expect, it } from "vitest";
import { api, causes, freshNamespace, hasKubectl, kubectl, shared } from "../helpers/cluster";

const t = shared();
const NET = "/apis/networking.k8s.io/v1";

const ingress = (name: string, spec: Record<string, unknown>, annotations?: Record<string, string>) => ({
  apiVersion: "networking.k8s.io/v1",
  kind: "Ingress",
  metadata: { name, ...(annotations ? { annotations } : {}) },
  spec,
});

const backend = (name = "web", port: Record<string, unknown> = { number: 80 }) => ({
  service: { name, port },
});

describe("networking.k8s.io/v1", () => {
  it("validates Ingresses as upstream, and warns about the class annotation", async () => {
    const ns = await freshNamespace(t);
    const post = (body: unknown) => api(t, "POST", `${NET}/namespaces/${ns}/ingresses`, body);
    expect(await causes(await post(ingress("a", {})))).toEqual([
      "spec: Invalid value: null: either `defaultBackend` or `rules` must be specified",
    ]);
    const bad = ingress("b", {
      rules: [
        {
          host: "10.0.0.1",
          http: {
            paths: [
              { path: "api", pathType: "Prefix", backend: backend() },
              { path: "/x", backend: backend() },
              { path: "/y//z", pathType: "Exact", backend: backend("Web", { name: "http", number: 8080 }) },
              { path: "/", pathType: "Regex", backend: backend("web", {}) },
            ],
          },
        },
        { host: "*.example.com", http: { paths: [] } },
      ],
    });
    expect(await causes(await post(bad))).toEqual([
      'spec.rules[0].host: Invalid value: "10.0.0.1": must be a DNS name, not an IP address',
      'spec.rules[0].http.paths[0].path: Invalid value: "api": must be an absolute path',
      "spec.rules[0].http.paths[1].pathType: Required value: pathType must be specified",
      "spec.rules[0].http.paths[2].path: Invalid value: \"/y//z\": must not contain '//'",
      "spec.rules[0].http.paths[2].backend.service.name: Invalid value: \"Web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
      'spec.rules[0].http.paths[2].backend: Invalid value: "": cannot set both port name & port number',
      'spec.rules[0].http.paths[3].pathType: Unsupported value: "Regex": supported values: "Exact", "ImplementationSpecific", "Prefix"',
      "spec.rules[0].http.paths[3].backend: Required value: port name or number is required",
      "spec.rules[1].http.paths: Required value",
    ]);
    const ok = await post(
      ingress(
        "c",
        {
          rules: [
            {
              host: "*.example.com",
              http: { paths: [{ path: "/", pathType: "Prefix", backend: backend() }] },
            },
          ],
        },
        { "kubernetes.io/ingress.class": "nginx" },
      ),
    );
    expect(ok.status, ok.text).toBe(201);
    // a Warning header: its text quoted, with its own quotes escaped
    expect(ok.headers.get("warning")).toBe(
      '299 - "annotation \\"kubernetes.io/ingress.class\\" is deprecated, please use \'spec.ingressClassName\' instead"',
    );
    const both = await post(
      ingress(
        "d",
        { ingressClassName: "traefik", defaultBackend: backend() },
        { "kubernetes.io/ingress.class": "nginx" },
      ),
    );
    expect(await causes(both)).toEqual([
      'annotations.kubernetes.io/ingress.class: Invalid value: "nginx": must match `ingressClassName` when both are specified',
    ]);
  });

  it("defaults NetworkPolicies (policyTypes, TCP) and validates their peers and ports", async () => {
    const ns = await freshNamespace(t);
    const post = (name: string, spec: unknown) =>
      api(t, "POST", `${NET}/namespaces/${ns}/networkpolicies`, { metadata: { name }, spec });
    const made = await post("allow", {
      podSelector: { matchLabels: { app: "db" } },
      ingress: [{ from: [{ podSelector: {} }], ports: [{ port: 5432 }] }],
      egress: [{}],
    });
    expect(made.status, made.text).toBe(201);
    expect(made.json.spec.policyTypes).toEqual(["Ingress", "Egress"]);
    expect(made.json.spec.ingress[0].ports[0]).toEqual({ protocol: "TCP", port: 5432 });
    expect(
      await causes(
        await post("bad", {
          podSelector: {},
          ingress: [
            {
              from: [
                {},
                { ipBlock: { cidr: "10.0.0.0/16", except: ["10.1.0.0/24", "10.0.1.0/24"] }, podSelector: {} },
              ],
              ports: [
                { protocol: "ICMP", port: 80, endPort: 70 },
                { port: "http", endPort: 90 },
              ],
            },
          ],
          policyTypes: ["Ingress", "Sideways"],
        }),
      ),
    ).toEqual([
      'spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP"',
      "spec.ingress[0].ports[0].endPort: Invalid value: 80: must be greater than or equal to `port`",
      "spec.ingress[0].ports[1].endPort: Invalid value: 90: may not be specified when `port` is non-numeric",
      "spec.ingress[0].from[0]: Required value: must specify a peer",
      'spec.ingress[0].from[1].ipBlock.except[0]: Invalid value: "10.1.0.0/24": must be a strict subset of `cidr`',
      "spec.ingress[0].from[1]: Forbidden: may not specify both ipBlock and another peer",
      'spec.policyTypes[1]: Unsupported value: "Sideways": supported values: "Ingress", "Egress"',
    ]);
  });

  it("makes an IngressClass's controller immutable and defaults its parameters' scope", async () => {
    const name = `c-${Math.random().toString(36).slice(2, 7)}`;
    const path = `${NET}/ingressclasses`;
    const bad = await api(t, "POST", path, {
      metadata: { name: `${name}-x` },
      spec: { controller: "nginx" },
    });
    expect(await causes(bad)).toEqual([
      'spec.controller: Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")',
    ]);
    const r = await api(t, "POST", path, {
      metadata: { name },
      spec: {
        controller: "example.com/ingress",
        parameters: { apiGroup: "k8s.example.com", kind: "Params", name: "lb" },
      },
    });
    expect(r.status, r.text).toBe(201);
    expect(r.json.spec.parameters.scope).toBe("Cluster");
    const change = await api(
      t,
      "PATCH",
      `${path}/${name}`,
      { spec: { controller: "example.com/other" } },
      { "content-type": "application/merge-patch+json" },
    );
    expect(await causes(change)).toEqual([
      'spec.controller: Invalid value: "example.com/other": field is immutable',
    ]);
    if (hasKubectl) {
      const get = await kubectl(t, ["get", "ingressclass", name]);
      expect(get.stdout).toMatch(
        new RegExp(
          `^NAME\\s+CONTROLLER\\s+PARAMETERS\\s+AGE\\n${name}\\s+example\\.com/ingress\\s+Params\\.k8s\\.example\\.com/lb\\s+\\d+s\\n$`,
        ),
      );
    }
    await api(t, "DELETE", `${path}/${name}`);
  });

  it.skipIf(!hasKubectl)("kubectl create ingress and get ing / netpol print upstream's columns", async () => {
    const ns = await freshNamespace(t);
    const made = await kubectl(t, [
      "create",
      "ingress",
      "site",
      "-n",
      ns,
      "--class=nginx",
      "--rule=a.example.com/=web:80",
      "--rule=b.example.com/*=api:8080,tls=site-tls",
    ]);
    expect(made.stdout, made.stderr).toBe("ingress.networking.k8s.io/site created\n");
    const ing = await kubectl(t, ["get", "ing", "-n", ns]);
    expect(ing.stdout).toMatch(
      /^NAME\s+CLASS\s+HOSTS\s+ADDRESS\s+PORTS\s+AGE\nsite\s+nginx\s+a\.example\.com,b\.example\.com\s+80, 443\s+\d+s\n$/,
    );
    const np = await api(t, "POST", `${NET}/namespaces/${ns}/networkpolicies`, {
      metadata: { name: "deny" },
      spec: { podSelector: { matchLabels: { app: "web" } } },
    });
    expect(np.status).toBe(201);
    const got = await kubectl(t, ["get", "netpol", "-n", ns]);
    expect(got.stdout).toMatch(/^NAME\s+POD-SELECTOR\s+AGE\ndeny\s+app=web\s+\d+s\n$/);
  });
});
