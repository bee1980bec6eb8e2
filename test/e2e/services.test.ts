// Services as a user meets them through real kubectl: cluster IPs and node ports handed out
// from the configured ranges (and refused in upstream's words when taken or out of range),
// the default namespace's "kubernetes" Service, and Endpoints kept by the endpoints
// controller from the pods a Service selects.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { api, freshNamespace, hasKubectl, kubectl, shared, until } from "../helpers/cluster";

const t = shared();
const k = (args: string[], input?: string) => kubectl(t, args, { input });
const tmp = mkdtempSync(join(tmpdir(), "edgeplane-svc-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const toInt = (ip: string) => ip.split(".").reduce((n, o) => n * 256 + Number(o), 0);
const inServiceRange = (ip: string) => toInt(ip) > toInt("10.96.0.0") && toInt(ip) < toInt("10.112.0.0") - 1;

function manifest(ns: string, name: string, spec: string): string {
  const p = join(tmp, `${ns}-${name}.yaml`);
  writeFileSync(
    p,
    `apiVersion: v1\nkind: Service\nmetadata:\n  name: ${name}\n  namespace: ${ns}\nspec:\n${spec}`,
  );
  return p;
}

/** Creating this Service fails with a message containing `message`; nothing is left behind. */
async function refused(ns: string, name: string, spec: string, message: string): Promise<void> {
  const r = await k(["create", "-f", manifest(ns, name, spec)]);
  expect(r.code).not.toBe(0);
  expect(r.stderr).toContain(message);
  expect((await k(["get", "svc", name, "-n", ns])).code).not.toBe(0);
}

async function jsonpath(ns: string, what: string, path: string): Promise<string> {
  const r = await k(["get", what, "-n", ns, "-o", `jsonpath=${path}`]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}

describe.skipIf(!hasKubectl)("services", () => {
  it("the default namespace has the kubernetes Service on the range's first address", async () => {
    const r = await k(["get", "svc", "kubernetes", "-n", "default"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^kubernetes\s+ClusterIP\s+10\.96\.0\.1\s+<none>\s+443\/TCP\s+\S+$/m);
  });

  it("a ClusterIP Service gets a free address; a taken or foreign one is refused", async () => {
    const ns = await freshNamespace(t);
    const c = await k(["create", "service", "clusterip", "web", "--tcp=80:8080", "-n", ns]);
    expect(c.code, c.stderr).toBe(0);
    const ip = await jsonpath(ns, "svc/web", "{.spec.clusterIP}");
    expect(inServiceRange(ip), ip).toBe(true);
    expect(await jsonpath(ns, "svc/web", "{.spec.clusterIPs[0]}")).toBe(ip);
    expect(await jsonpath(ns, "svc/web", "{.spec.ipFamilies[0]} {.spec.ipFamilyPolicy}")).toBe(
      "IPv4 SingleStack",
    );

    await refused(
      ns,
      "dup",
      `  clusterIP: ${ip}\n  ports:\n  - port: 80\n`,
      `The Service "dup" is invalid: spec.clusterIPs: Invalid value: []string{"${ip}"}: failed to allocate IP ${ip}: provided IP is already allocated`,
    );
    await refused(
      ns,
      "far",
      "  clusterIP: 192.168.7.7\n  ports:\n  - port: 80\n",
      "provided IP is not in the valid range. The range of valid IPs is 10.96.0.0/12",
    );

    // a replace of a manifest without clusterIP keeps the address
    const web = manifest(
      ns,
      "web",
      "  selector:\n    app: web\n  ports:\n  - port: 80\n    targetPort: 8080\n",
    );
    const rep = await k(["replace", "-f", web]);
    expect(rep.code, rep.stderr).toBe(0);
    expect(await jsonpath(ns, "svc/web", "{.spec.clusterIP}")).toBe(ip);
    // an update may not move it
    const move = await k(["patch", "svc", "web", "-n", ns, "-p", '{"spec":{"clusterIP":"10.96.200.200"}}']);
    expect(move.code).not.toBe(0);
    expect(move.stderr).toContain("may not change once set");

    // turning it into an ExternalName Service gives the address back
    const ext = await k([
      "patch",
      "svc",
      "web",
      "-n",
      ns,
      "-p",
      '{"spec":{"type":"ExternalName","externalName":"example.org"}}',
    ]);
    expect(ext.code, ext.stderr).toBe(0);
    expect(await jsonpath(ns, "svc/web", "{.spec.clusterIP}")).toBe("");
    const reuse = await k([
      "create",
      "-f",
      manifest(ns, "reuse", `  clusterIP: ${ip}\n  ports:\n  - port: 80\n`),
    ]);
    expect(reuse.code, reuse.stderr).toBe(0);
  });

  it("dry runs hold nothing, and a deleted Service's address is free again", async () => {
    const ns = await freshNamespace(t);
    const ip = "10.96.0.77";
    for (let i = 0; i < 2; i++) {
      const d = await k([
        "create",
        "service",
        "clusterip",
        "dry",
        "--tcp=80",
        `--clusterip=${ip}`,
        "-n",
        ns,
        "--dry-run=server",
        "-o",
        "jsonpath={.spec.clusterIP}",
      ]);
      expect(d.code, d.stderr).toBe(0);
      expect(d.stdout).toBe(ip);
    }
    expect(
      (await k(["create", "service", "clusterip", "a", "--tcp=80", `--clusterip=${ip}`, "-n", ns])).code,
    ).toBe(0);
    expect((await k(["delete", "svc", "a", "-n", ns])).code).toBe(0);
    const b = await k(["create", "service", "clusterip", "b", "--tcp=80", `--clusterip=${ip}`, "-n", ns]);
    expect(b.code, b.stderr).toBe(0);
  });

  it("concurrent creates never share an address", async () => {
    const ns = await freshNamespace(t);
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        api(t, "POST", `/api/v1/namespaces/${ns}/services`, {
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: `s${i}` },
          spec: { ports: [{ port: 80 }], type: i % 2 ? "NodePort" : "ClusterIP" },
        }),
      ),
    );
    for (const r of replies) expect(r.status, r.text).toBe(201);
    const ips = replies.map((r) => r.json.spec.clusterIP);
    expect(new Set(ips).size).toBe(20);
    const ports = replies
      .filter((r) => r.json.spec.type === "NodePort")
      .map((r) => r.json.spec.ports[0].nodePort);
    expect(new Set(ports).size).toBe(10);
  });

  it("NodePort Services get node ports from the range; a taken one is refused", async () => {
    const ns = await freshNamespace(t);
    const c = await k(["create", "service", "nodeport", "np", "--tcp=80:8080", "-n", ns]);
    expect(c.code, c.stderr).toBe(0);
    const port = Number(await jsonpath(ns, "svc/np", "{.spec.ports[0].nodePort}"));
    expect(port).toBeGreaterThanOrEqual(30000);
    expect(port).toBeLessThanOrEqual(32767);
    const table = await k(["get", "svc", "np", "-n", ns]);
    expect(table.stdout).toMatch(new RegExp(`np\\s+NodePort\\s+10\\.\\S+\\s+<none>\\s+80:${port}/TCP`));

    await refused(
      ns,
      "clash",
      `  type: NodePort\n  ports:\n  - port: 80\n    nodePort: ${port}\n`,
      `spec.ports[0].nodePort: Invalid value: ${port}: provided port is already allocated`,
    );
    await refused(
      ns,
      "low",
      "  type: NodePort\n  ports:\n  - port: 80\n    nodePort: 8080\n",
      "spec.ports[0].nodePort: Invalid value: 8080: provided port is not in the valid range. The range of valid ports is 30000-32767",
    );
    // back to ClusterIP: the node port is released
    const back = await k(["patch", "svc", "np", "-n", ns, "-p", '{"spec":{"type":"ClusterIP"}}']);
    expect(back.code, back.stderr).toBe(0);
    expect(await jsonpath(ns, "svc/np", "{.spec.ports[0].nodePort}")).toBe("");
    const again = await k([
      "create",
      "-f",
      manifest(ns, "again", `  type: NodePort\n  ports:\n  - port: 80\n    nodePort: ${port}\n`),
    ]);
    expect(again.code, again.stderr).toBe(0);
    // and NodePort again: a fresh node port, not the one now taken by "again"
    const fwd = await k(["patch", "svc", "np", "-n", ns, "-p", '{"spec":{"type":"NodePort"}}']);
    expect(fwd.code, fwd.stderr).toBe(0);
    const fresh = Number(await jsonpath(ns, "svc/np", "{.spec.ports[0].nodePort}"));
    expect(fresh).toBeGreaterThanOrEqual(30000);
    expect(fresh).not.toBe(port);
  });
});

describe.skipIf(!hasKubectl)("endpoints", () => {
  // pods no scheduler picks up; their IPs and readiness are written the way a node reports them
  async function pod(ns: string, name: string, labels: Record<string, string>) {
    const r = await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, labels },
      spec: {
        schedulerName: "nobody",
        containers: [{ name: "c", image: "nginx", ports: [{ name: "http", containerPort: 8080 }] }],
      },
    });
    expect(r.status, r.text).toBe(201);
  }
  async function report(ns: string, name: string, ip: string, ready: boolean) {
    const r = await api(
      t,
      "PATCH",
      `/api/v1/namespaces/${ns}/pods/${name}/status`,
      {
        status: {
          phase: "Running",
          podIP: ip,
          podIPs: [{ ip }],
          conditions: [{ type: "Ready", status: ready ? "True" : "False" }],
        },
      },
      { "content-type": "application/merge-patch+json" },
    );
    expect(r.status, r.text).toBe(200);
  }
  const endpoints = async (ns: string, name: string) => {
    const r = await api(t, "GET", `/api/v1/namespaces/${ns}/endpoints/${name}`);
    return r.status === 200 ? r.json : undefined;
  };

  it("follow the pods a Service selects, ready or not", async () => {
    const ns = await freshNamespace(t);
    await pod(ns, "a", { app: "web" });
    await pod(ns, "b", { app: "web" });
    await pod(ns, "other", { app: "db" });
    await report(ns, "a", "10.244.1.5", true);
    await report(ns, "b", "10.244.1.6", false);
    await report(ns, "other", "10.244.1.7", true);
    const svc = await k(
      ["apply", "-f", "-"],
      `apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: ${ns}\n  labels:\n    tier: front\nspec:\n  selector:\n    app: web\n  ports:\n  - name: http\n    port: 80\n    targetPort: http\n`,
    );
    expect(svc.code, svc.stderr).toBe(0);

    const ep = await until("endpoints with a and b", async () => {
      const e = await endpoints(ns, "web");
      return e?.subsets?.[0]?.addresses && e.subsets[0].notReadyAddresses ? e : undefined;
    });
    expect(ep.metadata.labels).toEqual({ tier: "front" });
    expect(ep.subsets).toEqual([
      {
        addresses: [{ ip: "10.244.1.5", targetRef: expect.objectContaining({ kind: "Pod", name: "a" }) }],
        notReadyAddresses: [
          { ip: "10.244.1.6", targetRef: expect.objectContaining({ kind: "Pod", name: "b" }) },
        ],
        ports: [{ name: "http", port: 8080, protocol: "TCP" }],
      },
    ]);
    const table = await k(["get", "endpoints", "web", "-n", ns]);
    expect(table.stdout).toMatch(/^web\s+10\.244\.1\.5:8080\s+\S+$/m);

    // the same as an EndpointSlice, which is what kubectl describe service reads
    const slice = await until("an EndpointSlice with a and b", async () => {
      const r = await api(
        t,
        "GET",
        `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dweb`,
      );
      const items = r.json?.items ?? [];
      return items.length === 1 && items[0].endpoints?.length === 2 ? items[0] : undefined;
    });
    expect(slice).toMatchObject({
      addressType: "IPv4",
      metadata: {
        generateName: "web-",
        labels: {
          tier: "front",
          "kubernetes.io/service-name": "web",
          "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
        },
        ownerReferences: [{ kind: "Service", name: "web", controller: true }],
      },
      ports: [{ name: "http", port: 8080, protocol: "TCP" }],
    });
    expect(slice.endpoints.map((e: any) => [e.addresses[0], e.conditions])).toEqual([
      ["10.244.1.5", { ready: true, serving: true, terminating: false }],
      ["10.244.1.6", { ready: false, serving: false, terminating: false }],
    ]);
    // settled means settled: the controllers do not rewrite what is already right
    const epRV = (await endpoints(ns, "web"))?.metadata.resourceVersion;
    await new Promise((r) => setTimeout(r, 1500));
    expect((await endpoints(ns, "web"))?.metadata.resourceVersion).toBe(epRV);
    const again = await api(
      t,
      "GET",
      `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices/${slice.metadata.name}`,
    );
    expect(again.json.metadata.resourceVersion).toBe(slice.metadata.resourceVersion);
    const described = await k(["describe", "svc", "web", "-n", ns]);
    expect(described.code, described.stderr).toBe(0);
    expect(described.stdout).toMatch(/^Endpoints:\s+10\.244\.1\.5:8080$/m);
    const slices = await k(["get", "endpointslices", "-n", ns]);
    expect(slices.stdout).toMatch(/^web-\S+\s+IPv4\s+8080\s+10\.244\.1\.5,10\.244\.1\.6\s+\S+$/m);

    // b turns ready, a leaves the selector
    await report(ns, "b", "10.244.1.6", true);
    const relabel = await k(["label", "pod", "a", "-n", ns, "app=gone", "--overwrite"]);
    expect(relabel.code, relabel.stderr).toBe(0);
    await until("only b, ready", async () => {
      const e = await endpoints(ns, "web");
      const s = e?.subsets;
      return (
        s?.length === 1 &&
        s[0].addresses?.length === 1 &&
        s[0].addresses[0].ip === "10.244.1.6" &&
        !s[0].notReadyAddresses
      );
    });

    // deleted by hand, they come back; the Service deleted, they go
    expect((await k(["delete", "endpoints", "web", "-n", ns])).code).toBe(0);
    await until("endpoints recreated", async () => (await endpoints(ns, "web"))?.subsets?.length === 1);
    expect((await k(["delete", "svc", "web", "-n", ns])).code).toBe(0);
    await until("endpoints removed", async () => (await endpoints(ns, "web")) === undefined);
    await until(
      "slices collected with their Service",
      async () =>
        (await api(t, "GET", `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`)).json.items
          .length === 0,
    );
  });

  it("a Service without a selector leaves its Endpoints to the user", async () => {
    const ns = await freshNamespace(t);
    const c = await k(["create", "-f", manifest(ns, "ext", "  ports:\n  - port: 5432\n")]);
    expect(c.code, c.stderr).toBe(0);
    const mine = {
      apiVersion: "v1",
      kind: "Endpoints",
      metadata: { name: "ext" },
      subsets: [{ addresses: [{ ip: "192.0.2.10" }], ports: [{ port: 5432, protocol: "TCP" }] }],
    };
    const r = await api(t, "POST", `/api/v1/namespaces/${ns}/endpoints`, mine);
    expect(r.status, r.text).toBe(201);
    await new Promise((res) => setTimeout(res, 1000));
    expect((await endpoints(ns, "ext"))?.subsets).toEqual(mine.subsets);
  });
});
