// apiregistration.k8s.io/v1 APIServices through real workerd and kubectl: the local ones the
// server registers for every group/version it serves (built-in and CRD groups, added and
// removed with their CRDs), upstream's validation as 422 causes, RBAC on the kind, and a
// remote APIService's Available condition with upstream's reasons when its Service is
// missing, listens elsewhere or has no endpoints, where requests are 503 "service
// unavailable". (The proxy to a live extension server: test/e2e/edgelet/aggregation.test.ts.)
import { describe, expect, it } from "vitest";
import { api, causes, freshNamespace, hasKubectl, kubectl, shared, until } from "../helpers/cluster";
import { crdManifest } from "../helpers/crds";

const t = shared();
const AS = "/apis/apiregistration.k8s.io/v1/apiservices";
const rand = () => Math.random().toString(36).slice(2, 8);

const apiService = (group: string, version: string, spec: Record<string, unknown> = {}, name?: string) => ({
  apiVersion: "apiregistration.k8s.io/v1",
  kind: "APIService",
  metadata: { name: name ?? `${version}.${group}` },
  spec: { group, version, groupPriorityMinimum: 1000, versionPriority: 15, ...spec },
});

const available = async (name: string) =>
  (await api(t, "GET", `${AS}/${name}`)).json?.status?.conditions?.find((c: any) => c.type === "Available");

const waitAvailable = (name: string, status: string, reason: string) =>
  until(
    `${name} Available=${status} ${reason}`,
    async () => {
      const c = await available(name);
      return c?.status === status && c?.reason === reason ? c : undefined;
    },
    30_000,
    200,
  );

describe("apiregistration.k8s.io/v1 apiservices", () => {
  it("every built-in group/version has a local APIService, Available as Local", async () => {
    for (const name of ["v1.", "v1.apps", "v1.apiregistration.k8s.io", "v2.autoscaling", "v1.batch"]) {
      const c = await waitAvailable(name, "True", "Local");
      expect(c.message).toBe("Local APIServices are always available");
    }
    const core = (await api(t, "GET", `${AS}/v1.`)).json;
    expect(core.spec).toMatchObject({
      group: "",
      version: "v1",
      groupPriorityMinimum: 18000,
      versionPriority: 1,
    });
    expect(core.spec.service).toBeUndefined();
    expect(core.metadata.labels["kube-aggregator.kubernetes.io/automanaged"]).toBe("onstart");
  });

  it.skipIf(!hasKubectl)("kubectl lists them, with upstream's columns", async () => {
    await waitAvailable("v1.apps", "True", "Local");
    const r = await kubectl(t, ["get", "apiservices"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^NAME\s+SERVICE\s+AVAILABLE\s+AGE$/m);
    expect(r.stdout).toMatch(/^v1\.apps\s+Local\s+True\s+\S+$/m);
    const res = await kubectl(t, ["api-resources", "--api-group=apiregistration.k8s.io", "--no-headers"]);
    expect(res.stdout).toMatch(/^apiservices\s+apiregistration\.k8s\.io\/v1\s+false\s+APIService$/m);
  });

  it("a CRD's group/version gets a local APIService while the CRD exists", async () => {
    const group = `aggr-${rand()}.example.com`;
    const crd = crdManifest(group, { plural: "widgets", kind: "Widget" }, [
      {
        name: "v1beta1",
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } },
      },
    ]);
    const c = await api(t, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd);
    expect(c.status, c.text).toBe(201);
    const name = `v1beta1.${group}`;
    await waitAvailable(name, "True", "Local");
    const svc = (await api(t, "GET", `${AS}/${name}`)).json;
    expect(svc.spec).toMatchObject({
      group,
      version: "v1beta1",
      groupPriorityMinimum: 1000,
      versionPriority: 100,
    });
    const d = await api(
      t,
      "DELETE",
      `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.${group}`,
    );
    expect(d.status, d.text).toBeLessThan(300);
    await until(
      `${name} removed`,
      async () => (await api(t, "GET", `${AS}/${name}`)).status === 404,
      30_000,
      200,
    );
  });

  it("validation: upstream's causes", async () => {
    const g = `v-${rand()}.example.com`;
    const svcRef = { namespace: "default", name: "x", port: 443 };
    const cases: [Record<string, unknown>, string[]][] = [
      [
        apiService(g, "v1", {}, `v2.${g}`),
        [`metadata.name: Invalid value: "v2.${g}": must be \`spec.version+"."+spec.group\`: "v1.${g}"`],
      ],
      [
        apiService("", "v2", {}, "v2."),
        ["spec.group: Required value: only v1 may have an empty group and it better be legacy kube"],
      ],
      [
        apiService(g, "v1", { groupPriorityMinimum: 0, versionPriority: 1001 }),
        [
          "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
          "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000",
        ],
      ],
      [
        apiService(g, "v1", { caBundle: btoa("pem!"), insecureSkipTLSVerify: true }),
        [
          'spec.caBundle: Invalid value: "4 bytes": local APIServices may not have a caBundle',
          "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify",
        ],
      ],
      [
        apiService(g, "v1", { service: { port: 70000 } }),
        [
          "spec.service.namespace: Required value",
          "spec.service.name: Required value",
          "spec.service.port: Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive",
        ],
      ],
      [
        apiService(g, "v1", { service: svcRef, caBundle: btoa("pem!"), insecureSkipTLSVerify: true }),
        ["spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present"],
      ],
    ];
    for (const [body, want] of cases) {
      const r = await api(t, "POST", AS, body);
      expect(causes(r), JSON.stringify(body)).toEqual(want);
      expect(r.json.message).toContain(
        `APIService.apiregistration.k8s.io "${(body as any).metadata.name}" is invalid`,
      );
    }
    // the service port defaults to 443
    const ok = await api(
      t,
      "POST",
      AS,
      apiService(g, "v1", { service: { namespace: "default", name: "x" } }),
    );
    expect(ok.status, ok.text).toBe(201);
    expect(ok.json.spec.service.port).toBe(443);
    await api(t, "DELETE", `${AS}/v1.${g}`);
  });

  it.skipIf(!hasKubectl)("RBAC decides who may read them", async () => {
    const r = await kubectl(t, ["get", "apiservices", "--as=someone"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      'apiservices.apiregistration.k8s.io is forbidden: User "someone" cannot list resource "apiservices" in API group "apiregistration.k8s.io" at the cluster scope',
    );
  });

  it("a remote APIService without a working Service: upstream's reasons, and 503 service unavailable", async () => {
    const ns = await freshNamespace(t, "aggr");
    const group = `r-${rand()}.example.com`;
    const name = `v1.${group}`;
    const c = await api(
      t,
      "POST",
      AS,
      apiService(group, "v1", { service: { namespace: ns, name: "backend", port: 443 } }),
    );
    expect(c.status, c.text).toBe(201);
    const missing = await waitAvailable(name, "False", "ServiceNotFound");
    expect(missing.message).toBe(`service/backend in "${ns}" is not present`);
    const r = await api(t, "GET", `/apis/${group}/v1/namespaces/${ns}/things`);
    expect(r.status).toBe(503);
    expect(r.json).toMatchObject({
      kind: "Status",
      status: "Failure",
      reason: "ServiceUnavailable",
      code: 503,
    });
    expect(r.json.message).toBe("service unavailable");
    // the group is not in discovery while unavailable
    const apis = await api(t, "GET", "/apis");
    expect(apis.json.groups.map((g: any) => g.name)).not.toContain(group);

    // a Service on another port
    const svc = (port: number) => ({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "backend" },
      spec: { selector: { app: `none-${rand()}` }, ports: [{ name: "https", port, targetPort: 8443 }] },
    });
    const s = await api(t, "POST", `/api/v1/namespaces/${ns}/services`, svc(8443));
    expect(s.status, s.text).toBe(201);
    const port = await waitAvailable(name, "False", "ServicePortError");
    expect(port.message).toBe(`service/backend in "${ns}" is not listening on port 443`);

    // on the right port, but nothing ready behind it
    const cur = (await api(t, "GET", `/api/v1/namespaces/${ns}/services/backend`)).json;
    cur.spec.ports[0].port = 443;
    const u = await api(t, "PUT", `/api/v1/namespaces/${ns}/services/backend`, cur);
    expect(u.status, u.text).toBe(200);
    const none = await until(
      `${name} without endpoints`,
      async () => {
        const c = await available(name);
        return c?.reason === "MissingEndpoints" || c?.reason === "EndpointsNotFound" ? c : undefined;
      },
      30_000,
      200,
    );
    expect(none.status).toBe("False");
    expect([
      `endpointslices for service/backend in "${ns}" have no addresses with port name "https"`,
      `cannot find endpointslices for service/backend in "${ns}"`,
    ]).toContain(none.message);
    expect((await api(t, "GET", `/apis/${group}/v1`)).status).toBe(503);
    await api(t, "DELETE", `${AS}/${name}`);
  });
});
