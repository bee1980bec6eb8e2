// The admission plugins through the real apiserver on workerd: ServiceAccount,
// DefaultTolerationSeconds, LimitRanger, ResourceQuota (no over-admission under concurrent
// creates), PodSecurity, SecurityContextDeny (enabled through EDGEPLANE_ADMISSION_PLUGINS) and
// the Initializers sidecar injection; a denied create stores nothing and emits no watch event.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, freshNamespace, hasKubectl, kubectl, shared, type Target } from "../helpers/cluster";
import { type OwnServer, removeStateDir, startOwnServer } from "../helpers/own-server";
import { openWatch } from "../helpers/watch-stream";

const pod = (name: string, extra: Record<string, any> = {}, container: Record<string, any> = {}) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name },
  spec: { containers: [{ name: "c", image: "nginx", ...container }], ...extra },
});

describe("admission plugins", () => {
  let server: OwnServer;

  beforeAll(async () => {
    server = await startOwnServer({ vars: { EDGEPLANE_ADMISSION_PLUGINS: "SecurityContextDeny" } });
  });

  afterAll(async () => {
    await server?.stop();
    removeStateDir(server?.stateDir);
  });

  const create = (t: Target, ns: string, body: unknown, resource = "pods") =>
    api(t, "POST", `/api/v1/namespaces/${ns}/${resource}`, body);

  it("defaults the service account, mounts its token and adds the default tolerations", async () => {
    const ns = await freshNamespace(server, "sa");
    const r = await create(server, ns, pod("p"));
    expect(r.status, r.text).toBe(201);
    const spec = r.json.spec;
    expect(spec.serviceAccountName).toBe("default");
    const vol = spec.volumes.find((v: any) => v.name.startsWith("kube-api-access-"));
    expect(vol.projected.sources[0].serviceAccountToken.expirationSeconds).toBe(3607);
    expect(spec.containers[0].volumeMounts).toContainEqual({
      name: vol.name,
      readOnly: true,
      mountPath: "/var/run/secrets/kubernetes.io/serviceaccount",
    });
    expect(spec.tolerations).toEqual([
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
    const missing = await create(server, ns, pod("q", { serviceAccountName: "ghost" }));
    expect(missing.status).toBe(403);
    expect(missing.json.message).toBe(
      `pods "q" is forbidden: error looking up service account ${ns}/ghost: serviceaccount "ghost" not found`,
    );
  });

  it("LimitRanger fills defaults and rejects a pod over the maximum", async () => {
    const ns = await freshNamespace(server, "lr");
    const lr = await create(
      server,
      ns,
      {
        apiVersion: "v1",
        kind: "LimitRange",
        metadata: { name: "limits" },
        spec: {
          limits: [
            {
              type: "Container",
              max: { cpu: "1" },
              default: { cpu: "500m" },
              defaultRequest: { cpu: "100m" },
            },
          ],
        },
      },
      "limitranges",
    );
    expect(lr.status, lr.text).toBe(201);
    const ok = await create(server, ns, pod("small"));
    expect(ok.status, ok.text).toBe(201);
    expect(ok.json.spec.containers[0].resources).toEqual({
      limits: { cpu: "500m" },
      requests: { cpu: "100m" },
    });
    expect(ok.json.metadata.annotations["kubernetes.io/limit-ranger"]).toBe(
      "LimitRanger plugin set: cpu request for container c; cpu limit for container c",
    );
    const big = await create(server, ns, pod("big", {}, { resources: { limits: { cpu: "2" } } }));
    expect(big.status).toBe(403);
    expect(big.json.reason).toBe("Forbidden");
    expect(big.json.message).toBe(
      'pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2',
    );
    expect((await api(server, "GET", `/api/v1/namespaces/${ns}/pods/big`)).status).toBe(404);
  });

  it("ResourceQuota admits exactly up to the limit under concurrent creates", async () => {
    const ns = await freshNamespace(server, "rq");
    // one pod before the quota: its initial usage counts it
    expect((await create(server, ns, pod("before"))).status).toBe(201);
    const q = await create(
      server,
      ns,
      { apiVersion: "v1", kind: "ResourceQuota", metadata: { name: "q" }, spec: { hard: { pods: "3" } } },
      "resourcequotas",
    );
    expect(q.status, q.text).toBe(201);
    expect(q.json.status).toEqual({ hard: { pods: "3" }, used: { pods: "1" } });
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => create(server, ns, pod(`p${i}`))));
    const codes = results.map((r) => r.status).sort();
    expect(codes.filter((c) => c === 201)).toHaveLength(2);
    expect(codes.filter((c) => c === 403)).toHaveLength(8);
    const denied = results.find((r) => r.status === 403)!;
    expect(denied.json.message).toMatch(
      /^pods "p\d" is forbidden: exceeded quota: q, requested: pods=1, used: pods=3, limited: pods=3$/,
    );
    const list = await api(server, "GET", `/api/v1/namespaces/${ns}/pods`);
    expect(list.json.items).toHaveLength(3);
    const used = await api(server, "GET", `/api/v1/namespaces/${ns}/resourcequotas/q`);
    expect(used.json.status.used).toEqual({ pods: "3" });
    // a pod that finished gives its unit back
    const admitted = results.find((r) => r.status === 201)!.json.metadata.name;
    const done = await api(
      server,
      "PATCH",
      `/api/v1/namespaces/${ns}/pods/${admitted}/status`,
      JSON.stringify({ status: { phase: "Succeeded" } }),
      { "content-type": "application/merge-patch+json" },
    );
    expect(done.status, done.text).toBe(200);
    const afterDone = await api(server, "GET", `/api/v1/namespaces/${ns}/resourcequotas/q`);
    expect(afterDone.json.status.used).toEqual({ pods: "2" });
    expect((await create(server, ns, pod("next"))).status).toBe(201);
    // a delete gives the unit back
    expect(
      (await api(server, "DELETE", `/api/v1/namespaces/${ns}/pods/before?gracePeriodSeconds=0`)).status,
    ).toBe(200);
    const again = await create(server, ns, pod("after"));
    expect(again.status, again.text).toBe(201);
  });

  it("ResourceQuota on compute: containers must state it, and the sum is bounded", async () => {
    const ns = await freshNamespace(server, "rqc");
    const q = await create(
      server,
      ns,
      {
        apiVersion: "v1",
        kind: "ResourceQuota",
        metadata: { name: "compute" },
        spec: { hard: { "requests.cpu": "1" } },
      },
      "resourcequotas",
    );
    expect(q.status, q.text).toBe(201);
    const bare = await create(server, ns, pod("bare"));
    expect(bare.status).toBe(403);
    expect(bare.json.message).toBe(
      'pods "bare" is forbidden: failed quota: compute: must specify requests.cpu',
    );
    const cpu = { resources: { requests: { cpu: "600m" } } };
    expect((await create(server, ns, pod("one", {}, cpu))).status).toBe(201);
    const two = await create(server, ns, pod("two", {}, cpu));
    expect(two.status).toBe(403);
    expect(two.json.message).toBe(
      'pods "two" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1',
    );
  });

  it("PodSecurity enforce rejects a privileged pod with upstream's message; warn answers with a Warning", async () => {
    const ns = `ps-${Math.random().toString(36).slice(2, 8)}`;
    const r = await api(server, "POST", "/api/v1/namespaces", {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: {
        name: ns,
        labels: {
          "pod-security.kubernetes.io/enforce": "restricted",
          "pod-security.kubernetes.io/warn": "restricted",
        },
      },
    });
    expect(r.status).toBe(201);
    const priv = await create(server, ns, pod("priv", {}, { securityContext: { privileged: true } }));
    expect(priv.status).toBe(403);
    expect(priv.json.message).toBe(
      'pods "priv" is forbidden: violates PodSecurity "restricted:latest": ' +
        'privileged (container "c" must not set securityContext.privileged=true), ' +
        'allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), ' +
        'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), ' +
        'runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), ' +
        'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
    );
    const good = await create(
      server,
      ns,
      pod(
        "good",
        { securityContext: { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } } },
        { securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } } },
      ),
    );
    expect(good.status, good.text).toBe(201);
    const dep = await api(server, "POST", `/apis/apps/v1/namespaces/${ns}/deployments`, {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "d" },
      spec: {
        replicas: 0,
        selector: { matchLabels: { app: "d" } },
        template: {
          metadata: { labels: { app: "d" } },
          spec: { containers: [{ name: "c", image: "nginx" }] },
        },
      },
    });
    expect(dep.status, dep.text).toBe(201);
    expect(dep.headers.get("warning") ?? "").toContain('would violate PodSecurity \\"restricted:latest\\"');
  });

  it("PodSecurity warns, never refuses, when a workload's template breaks the enforce level (warn defaults to it)", async () => {
    const ns = `psw-${Math.random().toString(36).slice(2, 8)}`;
    const made = await api(server, "POST", "/api/v1/namespaces", {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: ns, labels: { "pod-security.kubernetes.io/enforce": "baseline" } },
    });
    expect(made.status, made.text).toBe(201);
    const template = {
      metadata: { labels: { app: "w" } },
      spec: {
        restartPolicy: "Always",
        containers: [{ name: "c", image: "busybox", securityContext: { privileged: true } }],
      },
    };
    const once = { ...template, spec: { ...template.spec, restartPolicy: "Never" } };
    const selector = { matchLabels: { app: "w" } };
    const workloads: Array<[string, Record<string, unknown>]> = [
      [
        "/apis/apps/v1/namespaces/NS/deployments",
        { kind: "Deployment", spec: { replicas: 0, selector, template } },
      ],
      [
        "/apis/apps/v1/namespaces/NS/replicasets",
        { kind: "ReplicaSet", spec: { replicas: 0, selector, template } },
      ],
      [
        "/apis/apps/v1/namespaces/NS/statefulsets",
        { kind: "StatefulSet", spec: { replicas: 0, serviceName: "w", selector, template } },
      ],
      ["/apis/apps/v1/namespaces/NS/daemonsets", { kind: "DaemonSet", spec: { selector, template } }],
      ["/apis/batch/v1/namespaces/NS/jobs", { kind: "Job", spec: { suspend: true, template: once } }],
      [
        "/apis/batch/v1/namespaces/NS/cronjobs",
        {
          kind: "CronJob",
          spec: { schedule: "0 0 1 1 *", suspend: true, jobTemplate: { spec: { template: once } } },
        },
      ],
      [
        "/api/v1/namespaces/NS/replicationcontrollers",
        { kind: "ReplicationController", spec: { replicas: 0, selector: { app: "w" }, template } },
      ],
      ["/api/v1/namespaces/NS/podtemplates", { kind: "PodTemplate", template }],
    ];
    const warning =
      'would violate PodSecurity \\"baseline:latest\\": privileged (container \\"c\\" must not set securityContext.privileged=true)';
    for (const [path, obj] of workloads) {
      const url = path.replace("NS", ns);
      const apiVersion = url.startsWith("/api/v1") ? "v1" : url.split("/").slice(2, 4).join("/");
      const r = await api(server, "POST", url, { apiVersion, metadata: { name: "w" }, ...obj });
      expect(r.status, `${obj.kind}: ${r.text}`).toBe(201);
      expect(r.headers.get("warning") ?? "", String(obj.kind)).toContain(warning);
      // an update warns again, as upstream's check of every workload write does
      const u = await api(
        server,
        "PATCH",
        `${url}/w`,
        { metadata: { labels: { touched: "yes" } } },
        {
          "content-type": "application/merge-patch+json",
        },
      );
      expect(u.status, `${obj.kind}: ${u.text}`).toBe(200);
      expect(u.headers.get("warning") ?? "", String(obj.kind)).toContain(warning);
    }
    // the pod itself is refused, without a warning beside the refusal
    const priv = await create(server, ns, pod("priv", {}, { securityContext: { privileged: true } }));
    expect(priv.status).toBe(403);
    expect(priv.headers.get("warning")).toBeNull();
    // a warn label of its own wins over the enforce level: privileged warns of nothing
    const quiet = `psq-${Math.random().toString(36).slice(2, 8)}`;
    await api(server, "POST", "/api/v1/namespaces", {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: {
        name: quiet,
        labels: {
          "pod-security.kubernetes.io/enforce": "baseline",
          "pod-security.kubernetes.io/warn": "privileged",
        },
      },
    });
    const d = await api(server, "POST", `/apis/apps/v1/namespaces/${quiet}/deployments`, {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "w" },
      spec: { replicas: 0, selector, template },
    });
    expect(d.status, d.text).toBe(201);
    expect(d.headers.get("warning")).toBeNull();
  });

  it("PodSecurity warns about existing pods when a namespace's enforce level tightens", async () => {
    const ns = await freshNamespace(server, "psw");
    expect(
      (await create(server, ns, pod("priv", {}, { securityContext: { privileged: true } }))).status,
    ).toBe(201);
    const r = await api(
      server,
      "PATCH",
      `/api/v1/namespaces/${ns}`,
      JSON.stringify({ metadata: { labels: { "pod-security.kubernetes.io/enforce": "baseline" } } }),
      { "content-type": "application/merge-patch+json" },
    );
    expect(r.status, r.text).toBe(200);
    const warning = r.headers.get("warning") ?? "";
    expect(warning).toContain(
      `existing pods in namespace \\"${ns}\\" violate the new PodSecurity enforce level`,
    );
    expect(warning).toContain("priv: privileged");
  });

  it("SecurityContextDeny, when enabled, rejects what it covers; it is off by default", async () => {
    const ns = await freshNamespace(server, "scd");
    const bad = await create(server, ns, pod("ru", { securityContext: { runAsUser: 1000 } }));
    expect(bad.status).toBe(403);
    expect(bad.json.message).toBe('pods "ru" is forbidden: pod.Spec.SecurityContext.RunAsUser is forbidden');
    const se = await create(
      server,
      ns,
      pod("se", {}, { securityContext: { seLinuxOptions: { level: "s0:c1" } } }),
    );
    expect(se.status).toBe(403);
    expect(se.json.message).toBe('pods "se" is forbidden: SecurityContext.SELinuxOptions is forbidden');
    const t = shared();
    const ns2 = await freshNamespace(t, "scd");
    const allowed = await create(t, ns2, pod("ru", { securityContext: { runAsUser: 1000 } }));
    expect(allowed.status, allowed.text).toBe(201);
  });

  it("Initializers inject the configured sidecar into pods exposing port 80", async () => {
    const rule = {
      name: "sidecar.example.com",
      match: { resources: ["pods"], containerPort: 80 },
      patchType: "json",
      patch: [{ op: "add", path: "/spec/containers/-", value: { name: "proxy", image: "envoyproxy/envoy" } }],
    };
    const cm = await create(
      server,
      "kube-system",
      {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "edgeplane-initializers" },
        data: { sidecar: JSON.stringify(rule) },
      },
      "configmaps",
    );
    expect(cm.status, cm.text).toBe(201);
    try {
      const ns = await freshNamespace(server, "init");
      const web = await create(server, ns, pod("web", {}, { ports: [{ containerPort: 80 }] }));
      expect(web.status, web.text).toBe(201);
      const names = web.json.spec.containers.map((c: any) => c.name);
      expect(names).toEqual(["c", "proxy"]);
      // the sidecar was there before the other plugins ran: defaulted, with the token mount
      const proxy = web.json.spec.containers[1];
      expect(proxy.imagePullPolicy).toBeDefined();
      expect(proxy.volumeMounts.map((m: any) => m.mountPath)).toContain(
        "/var/run/secrets/kubernetes.io/serviceaccount",
      );
      expect(web.json.metadata.annotations["edgeplane.io/initializers"]).toBe("sidecar.example.com");
      const db = await create(server, ns, pod("db", {}, { ports: [{ containerPort: 5432 }] }));
      expect(db.json.spec.containers.map((c: any) => c.name)).toEqual(["c"]);
    } finally {
      await api(server, "DELETE", "/api/v1/namespaces/kube-system/configmaps/edgeplane-initializers");
    }
  });

  it("a denied create leaves no object and no watch event", async () => {
    const ns = await freshNamespace(server, "deny");
    const w = await openWatch(server, `/api/v1/namespaces/${ns}/pods?watch=1`);
    try {
      const denied = await create(server, ns, pod("denied", { securityContext: { fsGroup: 1 } }));
      expect(denied.status).toBe(403);
      const ok = await create(server, ns, pod("allowed"));
      expect(ok.status, ok.text).toBe(201);
      await w.waitFor(1);
      await new Promise((r) => setTimeout(r, 500));
      // the allowed pod may be modified later (scheduling, status); the denied one never shows up
      expect(`${w.events[0].type} ${w.events[0].object.metadata.name}`).toBe("ADDED allowed");
      expect(new Set(w.events.map((e) => e.object.metadata.name))).toEqual(new Set(["allowed"]));
      expect((await api(server, "GET", `/api/v1/namespaces/${ns}/pods/denied`)).status).toBe(404);
    } finally {
      w.close();
    }
  });

  it.skipIf(!hasKubectl)("kubectl shows the admission error", async () => {
    const ns = await freshNamespace(server, "kc");
    const r = await kubectl(server, [
      "-n",
      ns,
      "run",
      "x",
      "--image=nginx",
      "--overrides",
      JSON.stringify({ spec: { securityContext: { runAsUser: 5 } } }),
    ]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('pods "x" is forbidden: pod.Spec.SecurityContext.RunAsUser is forbidden');
  });
});
