// The Service rules the proxier compiles (after kube-proxy's nftables mode), read as ruleset
// data and as the text nft gets; and, where nft is installed, that the kernel accepts a
// compiled table (`nft -c`: checked, never committed).
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { groupSlices } from "../../../agent/network/endpoints";
import {
  addBase,
  addServices,
  dedupeElements,
  type ServicesConfig,
} from "../../../agent/network/proxier/compile";
import { emptyRuleset, type Ruleset, renderDiff, renderFull } from "../../../agent/network/proxier/ruleset";
import { slice, svc } from "./fixtures";

const cfg: ServicesConfig = {
  nodeName: "n1",
  clusterCIDR: "10.244.0.0/16",
  localhostNodePorts: true,
  redirects: new Map([["default/kubernetes:TCP", { ip: "192.0.2.2", port: 40000 }]]),
};

function compile(services: any[], slices: any[], c: ServicesConfig = cfg): Ruleset {
  const rs = emptyRuleset("t");
  addBase(rs, c);
  addServices(rs, c, services, groupSlices(slices));
  dedupeElements(rs);
  return rs;
}

const http = [{ name: "http", port: 8080, protocol: "TCP" }];
const web = svc("web", {
  clusterIP: "10.96.0.20",
  ports: [{ name: "http", port: 80, protocol: "TCP", targetPort: 8080 }],
});
const elements = (rs: Ruleset, set: string) => rs.sets.get(set)!.elements;
const rules = (rs: Ruleset, chain: string) => rs.chains.get(chain)?.rules;

describe("proxier: Services into nftables", () => {
  it("a ClusterIP goes to a chain that picks a ready endpoint at random and DNATs to it", () => {
    const rs = compile([web], [slice("web", http, [{ ip: "10.244.0.5" }, { ip: "10.244.1.6" }])]);
    expect(elements(rs, "service-ips")).toEqual(["10.96.0.20 . tcp . 80 : goto svc-ns/web/tcp/http"]);
    expect(rules(rs, "svc-ns/web/tcp/http")).toEqual([
      "ip daddr 10.96.0.20 tcp dport 80 ip saddr != 10.244.0.0/16 jump mark-for-masquerade",
      "meta l4proto tcp dnat to numgen random mod 2 map { 0 : 10.244.0.5 . 8080, 1 : 10.244.1.6 . 8080 }",
    ]);
    // each endpoint reaching itself through the Service is masqueraded (hairpin)
    expect(elements(rs, "hairpin").sort()).toEqual(["10.244.0.5 . 10.244.0.5", "10.244.1.6 . 10.244.1.6"]);
  });

  it("terminating endpoints serve only when no endpoint is ready (as upstream's CategorizeEndpoints)", () => {
    const both = compile(
      [web],
      [
        slice("web", http, [
          { ip: "10.244.0.5" },
          { ip: "10.244.0.6", ready: false, serving: true, terminating: true },
        ]),
      ],
    );
    expect(rules(both, "svc-ns/web/tcp/http")!.at(-1)).toBe("meta l4proto tcp dnat to 10.244.0.5:8080");
    const onlyTerminating = compile(
      [web],
      [slice("web", http, [{ ip: "10.244.0.6", ready: false, serving: true, terminating: true }])],
    );
    expect(rules(onlyTerminating, "svc-ns/web/tcp/http")!.at(-1)).toBe(
      "meta l4proto tcp dnat to 10.244.0.6:8080",
    );
    const notServing = compile(
      [web],
      [slice("web", http, [{ ip: "10.244.0.6", ready: false, serving: false, terminating: true }])],
    );
    expect(rules(notServing, "svc-ns/web/tcp/http")).toBeUndefined();
  });

  it("a Service without endpoints is rejected at once; one whose endpoints are all elsewhere under internalTrafficPolicy Local is dropped", () => {
    const none = compile([web], [slice("web", http, [])]);
    expect(elements(none, "service-ips")).toEqual([]);
    expect(elements(none, "no-endpoint-services")).toEqual(["10.96.0.20 . tcp . 80 : goto reject-chain"]);
    const local = svc("web", { ...web.spec, internalTrafficPolicy: "Local" });
    const remote = compile([local], [slice("web", http, [{ ip: "10.244.1.6", node: "n2" }])]);
    expect(elements(remote, "no-endpoint-services")).toEqual(["10.96.0.20 . tcp . 80 : drop"]);
    const mine = compile(
      [local],
      [
        slice("web", http, [
          { ip: "10.244.1.6", node: "n2" },
          { ip: "10.244.0.5", node: "n1" },
        ]),
      ],
    );
    expect(elements(mine, "service-ips")).toEqual(["10.96.0.20 . tcp . 80 : goto local-ns/web/tcp/http"]);
    expect(rules(mine, "local-ns/web/tcp/http")).toEqual(["meta l4proto tcp dnat to 10.244.0.5:8080"]);
  });

  it("NodePort: every local address answers; the Cluster policy masquerades, the Local one keeps the client and uses local endpoints only", () => {
    const np = svc("web", {
      ...web.spec,
      type: "NodePort",
      externalTrafficPolicy: "Cluster",
      ports: [{ name: "http", port: 80, protocol: "TCP", nodePort: 30080 }],
    });
    const eps = [
      slice("web", http, [
        { ip: "10.244.0.5", node: "n1" },
        { ip: "10.244.1.6", node: "n2" },
      ]),
    ];
    const cluster = compile([np], eps);
    expect(elements(cluster, "service-nodeports")).toEqual(["tcp . 30080 : goto ext-ns/web/tcp/http"]);
    expect(rules(cluster, "ext-ns/web/tcp/http")).toEqual([
      "jump mark-for-masquerade",
      "goto svc-ns/web/tcp/http",
    ]);
    expect(rules(cluster, "services")).toContain(
      "fib daddr type local meta l4proto . th dport vmap @service-nodeports",
    );
    const local = compile([svc("web", { ...np.spec, externalTrafficPolicy: "Local" })], eps);
    expect(rules(local, "ext-ns/web/tcp/http")).toEqual([
      "ip saddr 10.244.0.0/16 goto svc-ns/web/tcp/http",
      "fib saddr type local jump mark-for-masquerade",
      "fib saddr type local goto svc-ns/web/tcp/http",
      "goto local-ns/web/tcp/http",
    ]);
    expect(rules(local, "local-ns/web/tcp/http")).toEqual(["meta l4proto tcp dnat to 10.244.0.5:8080"]);
    // without localhost NodePorts, 127.0.0.0/8 is left out
    const noLo = compile([np], eps, { ...cfg, localhostNodePorts: false });
    expect(rules(noLo, "services")).toContain(
      "fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports",
    );
  });

  it("LoadBalancer ingress IPs and external IPs go through the external chain", () => {
    const lb = svc(
      "web",
      {
        ...web.spec,
        type: "LoadBalancer",
        externalTrafficPolicy: "Cluster",
        externalIPs: ["198.51.100.7"],
        ports: [{ name: "http", port: 80, protocol: "TCP", nodePort: 30081 }],
      },
      "ns",
      { loadBalancer: { ingress: [{ ip: "192.0.2.2" }] } },
    );
    const rs = compile([lb], [slice("web", http, [{ ip: "10.244.0.5" }])]);
    expect(elements(rs, "service-ips").sort()).toEqual([
      "10.96.0.20 . tcp . 80 : goto svc-ns/web/tcp/http",
      "192.0.2.2 . tcp . 80 : goto ext-ns/web/tcp/http",
      "198.51.100.7 . tcp . 80 : goto ext-ns/web/tcp/http",
    ]);
  });

  it("sessionAffinity ClientIP: per-endpoint sets with the timeout, checked before the random choice", () => {
    const aff = svc("web", {
      ...web.spec,
      sessionAffinity: "ClientIP",
      sessionAffinityConfig: { clientIP: { timeoutSeconds: 60 } },
    });
    const rs = compile([aff], [slice("web", http, [{ ip: "10.244.0.5" }, { ip: "10.244.1.6" }])]);
    const chain = rules(rs, "svc-ns/web/tcp/http")!;
    expect(chain.slice(1)).toEqual([
      "ip saddr @aff-60-ns/web/tcp/http__10.244.0.5/8080 goto ep-ns/web/tcp/http__10.244.0.5/8080",
      "ip saddr @aff-60-ns/web/tcp/http__10.244.1.6/8080 goto ep-ns/web/tcp/http__10.244.1.6/8080",
      "numgen random mod 2 vmap { 0 : goto ep-ns/web/tcp/http__10.244.0.5/8080, 1 : goto ep-ns/web/tcp/http__10.244.1.6/8080 }",
    ]);
    expect(rules(rs, "ep-ns/web/tcp/http__10.244.0.5/8080")).toEqual([
      "update @aff-60-ns/web/tcp/http__10.244.0.5/8080 { ip saddr }",
      "meta l4proto tcp dnat to 10.244.0.5:8080",
    ]);
    expect(rs.sets.get("aff-60-ns/web/tcp/http__10.244.0.5/8080")).toMatchObject({
      decl: "type ipv4_addr; flags dynamic,timeout; timeout 60s;",
      dynamic: true,
    });
  });

  it("headless and ExternalName Services get no rules; a selectorless Service uses its hand-made slice", () => {
    const rs = compile(
      [
        svc("h", { clusterIP: "None", ports: [{ port: 80 }] }),
        svc("x", { type: "ExternalName", externalName: "example.com" }),
        svc("ext", { clusterIP: "10.96.0.30", ports: [{ port: 443, protocol: "TCP" }] }),
      ],
      [
        slice("h", [{ port: 80, protocol: "TCP" }], [{ ip: "10.244.0.5" }]),
        slice("ext", [{ name: "", port: 8443, protocol: "TCP" }], [{ ip: "203.0.113.9" }], "ns", "ext-1"),
      ],
    );
    expect(elements(rs, "service-ips")).toEqual(["10.96.0.30 . tcp . 443 : goto svc-ns/ext/tcp/443"]);
    expect(rules(rs, "svc-ns/ext/tcp/443")!.at(-1)).toBe("meta l4proto tcp dnat to 203.0.113.9:8443");
  });

  it("a Service whose pods lack the named port it targets: no rule, and a reported problem", () => {
    const problems: any[] = [];
    const named = svc("web", {
      clusterIP: "10.96.0.20",
      ports: [{ name: "http", port: 80, protocol: "TCP", targetPort: "web" }],
    });
    const rs = emptyRuleset("t");
    addBase(rs, cfg);
    // the EndpointSlice controller lists the selected pods with no ports: none has "web"
    addServices(rs, cfg, [named], groupSlices([slice("web", [], [{ ip: "10.244.0.5" }])]), (p) =>
      problems.push(p),
    );
    expect(elements(rs, "service-ips")).toEqual([]);
    expect(elements(rs, "no-endpoint-services")).toEqual(["10.96.0.20 . tcp . 80 : goto reject-chain"]);
    expect(problems).toEqual([
      expect.objectContaining({ kind: "Service", name: "web", reason: "NoEndpointsForPort" }),
    ]);
  });

  it("a named target port resolved differently on two pods reaches each on its own port", () => {
    const rs = compile(
      [web],
      [
        slice("web", [{ name: "http", port: 8080, protocol: "TCP" }], [{ ip: "10.244.0.5" }], "ns", "a"),
        slice("web", [{ name: "http", port: 9090, protocol: "TCP" }], [{ ip: "10.244.0.6" }], "ns", "b"),
      ],
    );
    expect(rules(rs, "svc-ns/web/tcp/http")!.at(-1)).toBe(
      "meta l4proto tcp dnat to numgen random mod 2 map { 0 : 10.244.0.5 . 8080, 1 : 10.244.0.6 . 9090 }",
    );
  });

  it("the node-local servers (apiserver relay) replace a Service's endpoints", () => {
    const k8s = svc(
      "kubernetes",
      { clusterIP: "10.96.0.1", ports: [{ name: "https", port: 443, protocol: "TCP", targetPort: 6443 }] },
      "default",
    );
    const rs = compile(
      [k8s],
      [
        slice(
          "kubernetes",
          [{ name: "https", port: 6443, protocol: "TCP" }],
          [{ ip: "198.51.100.1" }],
          "default",
          "kubernetes",
        ),
      ],
    );
    expect(rules(rs, "svc-default/kubernetes/tcp/https")).toEqual([
      "meta l4proto tcp dnat to 192.0.2.2:40000",
    ]);
    expect(elements(rs, "hairpin")).toEqual([]);
  });

  it("two Services claiming one external IP and port: one element (the first), not a failed transaction", () => {
    const a = svc("a", {
      clusterIP: "10.96.0.41",
      externalIPs: ["198.51.100.7"],
      ports: [{ port: 80, protocol: "TCP" }],
    });
    const b = svc("b", {
      clusterIP: "10.96.0.42",
      externalIPs: ["198.51.100.7"],
      ports: [{ port: 80, protocol: "TCP" }],
    });
    const eps = [
      slice("a", [{ port: 80, protocol: "TCP" }], [{ ip: "10.244.0.5" }]),
      slice("b", [{ port: 80, protocol: "TCP" }], [{ ip: "10.244.0.6" }]),
    ];
    const ext = elements(compile([a, b], eps), "service-ips").filter((e) => e.startsWith("198.51.100.7"));
    expect(ext).toEqual(["198.51.100.7 . tcp . 80 : goto ext-ns/a/tcp/80"]);
  });

  it("a change of one endpoint rewrites that Service's chain only", () => {
    const before = compile(
      [web, svc("other", { clusterIP: "10.96.0.21", ports: [{ port: 80, protocol: "TCP" }] })],
      [
        slice("web", http, [{ ip: "10.244.0.5" }, { ip: "10.244.1.6" }]),
        slice("other", [{ port: 80, protocol: "TCP" }], [{ ip: "10.244.0.9" }]),
      ],
    );
    const after = compile([web], [slice("web", http, [{ ip: "10.244.0.5" }])]);
    const diff = renderDiff(before, after).trim().split("\n");
    expect(diff).toEqual([
      "delete element ip t service-ips { 10.96.0.21 . tcp . 80 : goto svc-ns/other/tcp/80 }",
      "delete element ip t hairpin { 10.244.1.6 . 10.244.1.6, 10.244.0.9 . 10.244.0.9 }",
      "flush chain ip t svc-ns/web/tcp/http",
      "flush chain ip t svc-ns/other/tcp/80",
      "delete chain ip t svc-ns/other/tcp/80",
      "add rule ip t svc-ns/web/tcp/http ip daddr 10.96.0.20 tcp dport 80 ip saddr != 10.244.0.0/16 jump mark-for-masquerade",
      "add rule ip t svc-ns/web/tcp/http meta l4proto tcp dnat to 10.244.0.5:8080",
    ]);
    expect(renderDiff(after, after)).toBe("");
  });

  const nft = ["/usr/sbin/nft", "/usr/bin/nft"].find((p) => existsSync(p));
  it.skipIf(!nft)("the kernel accepts a compiled table of every kind of Service (nft -c)", () => {
    const table = `unitcheck${process.pid}`;
    const rs = emptyRuleset(table);
    addBase(rs, cfg);
    addServices(
      rs,
      cfg,
      [
        web,
        svc("np", {
          clusterIP: "10.96.0.22",
          type: "NodePort",
          externalTrafficPolicy: "Local",
          internalTrafficPolicy: "Local",
          sessionAffinity: "ClientIP",
          ports: [
            { name: "http", port: 80, protocol: "TCP", nodePort: 30082 },
            { name: "dns", port: 53, protocol: "UDP", nodePort: 30053 },
          ],
        }),
        svc("empty", {
          clusterIP: "10.96.0.23",
          type: "NodePort",
          ports: [{ port: 81, protocol: "TCP", nodePort: 30083 }],
        }),
      ],
      groupSlices([
        slice("web", http, [{ ip: "10.244.0.5" }, { ip: "10.244.1.6" }]),
        slice(
          "np",
          [...http, { name: "dns", port: 5353, protocol: "UDP" }],
          [
            { ip: "10.244.0.7", node: "n1" },
            { ip: "10.244.1.8", node: "n2" },
          ],
        ),
      ]),
    );
    dedupeElements(rs);
    if (!nft) return;
    if (!existsSync(nft)) return;
    console.log(`checking with ${execFileSync(nft, ["--version"], { encoding: "utf8" }).trim()}`);
    execFileSync(nft, ["-c", "-f", "-"], { input: renderFull(rs) });
  });
});
