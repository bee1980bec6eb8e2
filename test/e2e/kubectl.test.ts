// Real kubectl 1.32, as a user types it (default validation, no extra flags), against the
// real apiserver on workerd.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { api, freshNamespace, hasKubectl, kubectl, rootCAIn, shared } from "../helpers/cluster";

const t = shared();
const tmp = mkdtempSync(join(tmpdir(), "edgeplane-kubectl-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const p = join(tmp, name);
  writeFileSync(p, text);
  return p;
}

const k = (args: string[], input?: string) => kubectl(t, args, { input });

describe.skipIf(!hasKubectl)("kubectl", () => {
  it("version, api-versions, api-resources", async () => {
    const v = await k(["version", "-o", "json"]);
    expect(v.code, v.stderr).toBe(0);
    expect(JSON.parse(v.stdout).serverVersion).toMatchObject({ major: "1", minor: "32" });
    const av = await k(["api-versions"]);
    expect(av.code, av.stderr).toBe(0);
    expect(av.stdout.split("\n")).toEqual(
      expect.arrayContaining(["v1", "apps/v1", "coordination.k8s.io/v1", "rbac.authorization.k8s.io/v1"]),
    );
    const ar = await k(["api-resources"]);
    expect(ar.code, ar.stderr).toBe(0);
    expect(ar.stdout).toMatch(/^pods\s+po\s+v1\s+true\s+Pod$/m);
    expect(ar.stdout).toMatch(/^deployments\s+deploy\s+apps\/v1\s+true\s+Deployment$/m);
  });

  it("explain pod.spec", async () => {
    const r = await k(["explain", "pod.spec"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("KIND:       Pod");
    expect(r.stdout).toContain("containers");
  });

  it("create -f, get in every output, describe, label, annotate, delete", async () => {
    const ns = await freshNamespace(t);
    const f = file(
      `cm-${ns}.yaml`,
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: ${ns}\n  labels:\n    app: web\ndata:\n  color: blue\n`,
    );
    const c = await k(["create", "-f", f]);
    expect(c.code, c.stderr).toBe(0);
    expect(c.stdout.trim()).toBe("configmap/settings created");
    // the namespace also holds kube-root-ca.crt, as upstream's every namespace does
    await rootCAIn(t, ns);
    const table = await k(["get", "configmaps", "-n", ns]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^NAME\s+DATA\s+AGE\nkube-root-ca\.crt\s+1\s+\S+\nsettings\s+1\s+\S+\n$/);
    const y = await k(["get", "cm", "settings", "-n", ns, "-o", "yaml"]);
    expect(y.stdout).toContain("color: blue");
    const j = await k(["get", "cm", "settings", "-n", ns, "-o", "json"]);
    expect(JSON.parse(j.stdout).data.color).toBe("blue");
    expect((await k(["get", "cm", "-n", ns, "-l", "app=web", "-o", "name"])).stdout.trim()).toBe(
      "configmap/settings",
    );
    expect((await k(["get", "cm", "-n", ns, "-l", "app=db", "-o", "name"])).stdout.trim()).toBe("");
    expect(
      (
        await k(["get", "cm", "-n", ns, "--field-selector", "metadata.name=settings", "-o", "name"])
      ).stdout.trim(),
    ).toBe("configmap/settings");
    const all = await k(["get", "cm", "-A"]);
    expect(all.stdout).toMatch(new RegExp(`^${ns}\\s+settings\\s+1\\s+`, "m"));
    const d = await k(["describe", "cm", "settings", "-n", ns]);
    expect(d.code, d.stderr).toBe(0);
    expect(d.stdout).toMatch(/Name:\s+settings/);
    expect((await k(["label", "cm", "settings", "-n", ns, "tier=front"])).stdout.trim()).toBe(
      "configmap/settings labeled",
    );
    expect((await k(["annotate", "cm", "settings", "-n", ns, "owner=me"])).stdout.trim()).toBe(
      "configmap/settings annotated",
    );
    const after = JSON.parse((await k(["get", "cm", "settings", "-n", ns, "-o", "json"])).stdout);
    expect(after.metadata.labels).toEqual({ app: "web", tier: "front" });
    expect(after.metadata.annotations.owner).toBe("me");
    const del = await k(["delete", "cm", "settings", "-n", ns]);
    expect(del.code, del.stderr).toBe(0);
    expect(del.stdout.trim()).toBe('configmap "settings" deleted');
    expect((await k(["get", "cm", "settings", "-n", ns])).stderr).toContain(
      'configmaps "settings" not found',
    );
  });

  it("apply -f twice says unchanged; apply --server-side", async () => {
    const ns = await freshNamespace(t);
    const f = file(
      `deploy-${ns}.yaml`,
      `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ${ns}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: busybox:1.36
        ports:
        - containerPort: 80
`,
    );
    const a1 = await k(["apply", "-f", f]);
    expect(a1.code, a1.stderr).toBe(0);
    expect(a1.stdout.trim()).toBe("deployment.apps/web created");
    const a2 = await k(["apply", "-f", f]);
    expect(a2.code, a2.stderr).toBe(0);
    expect(a2.stdout.trim()).toBe("deployment.apps/web unchanged");
    writeFileSync(
      f,
      (await import("node:fs")).readFileSync(f, "utf8").replace("busybox:1.36", "busybox:1.37"),
    );
    const a3 = await k(["apply", "-f", f]);
    expect(a3.stdout.trim()).toBe("deployment.apps/web configured");
    const img = await k([
      "get",
      "deploy",
      "web",
      "-n",
      ns,
      "-o",
      "jsonpath={.spec.template.spec.containers[0].image}",
    ]);
    expect(img.stdout).toBe("busybox:1.37");

    const s = file(
      `ss-${ns}.yaml`,
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ss\n  namespace: ${ns}\ndata:\n  a: "1"\n`,
    );
    const ss1 = await k(["apply", "--server-side", "-f", s]);
    expect(ss1.code, ss1.stderr).toBe(0);
    expect(ss1.stdout.trim()).toBe("configmap/ss serverside-applied");
    const got = JSON.parse(
      (await k(["get", "cm", "ss", "-n", ns, "-o", "json", "--show-managed-fields"])).stdout,
    );
    expect(got.metadata.managedFields[0]).toMatchObject({ manager: "kubectl", operation: "Apply" });
  });

  it("patch with strategic, merge and json types", async () => {
    const ns = await freshNamespace(t);
    await k(["create", "deployment", "pd", "-n", ns, "--image=busybox"]);
    const sp = await k([
      "patch",
      "deploy",
      "pd",
      "-n",
      ns,
      "-p",
      '{"spec":{"template":{"spec":{"containers":[{"name":"busybox","image":"busybox:2"}]}}}}',
    ]);
    expect(sp.code, sp.stderr).toBe(0);
    expect(sp.stdout.trim()).toBe("deployment.apps/pd patched");
    const mp = await k([
      "patch",
      "deploy",
      "pd",
      "-n",
      ns,
      "--type=merge",
      "-p",
      '{"metadata":{"labels":{"x":"y"}}}',
    ]);
    expect(mp.code, mp.stderr).toBe(0);
    const jp = await k([
      "patch",
      "deploy",
      "pd",
      "-n",
      ns,
      "--type=json",
      "-p",
      '[{"op":"replace","path":"/spec/replicas","value":4}]',
    ]);
    expect(jp.code, jp.stderr).toBe(0);
    const d = JSON.parse((await k(["get", "deploy", "pd", "-n", ns, "-o", "json"])).stdout);
    expect(d.spec.template.spec.containers).toHaveLength(1);
    expect(d.spec.template.spec.containers[0].image).toBe("busybox:2");
    expect(d.metadata.labels.x).toBe("y");
    expect(d.spec.replicas).toBe(4);
  });

  it("a typo in a manifest: kubectl's default validation is refused with upstream's words", async () => {
    const ns = await freshNamespace(t);
    const manifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: typo
spec:
  replica: 2
  selector:
    matchLabels: {app: typo}
  template:
    metadata:
      labels: {app: typo}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        imagePolicy: Always
`;
    const r = await k(["create", "-n", ns, "-f", "-"], manifest);
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim()).toBe(
      'Error from server (BadRequest): error when creating "STDIN": Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field "spec.replica", unknown field "spec.template.spec.containers[0].imagePolicy"',
    );
    // --validate=warn creates it, and says what it dropped
    const warn = await k(["create", "-n", ns, "-f", "-", "--validate=warn"], manifest);
    expect(warn.code, warn.stderr).toBe(0);
    expect(warn.stderr).toContain('Warning: unknown field "spec.replica"');
    expect(warn.stdout.trim()).toBe("deployment.apps/typo created");
  });

  it("a value of the wrong type in a manifest is refused as kube-apiserver refuses it", async () => {
    const ns = await freshNamespace(t);
    // the classic: an unquoted number in a ConfigMap's data
    const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: port\ndata:\n  port: 8080\n";
    const r = await k(["create", "-n", ns, "-f", "-"], cm);
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim()).toBe(
      'Error from server (BadRequest): error when creating "STDIN": ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string',
    );
    // the same with --validate=false: the decoding fails whatever the field validation
    const off = await k(["create", "-n", ns, "-f", "-", "--validate=false"], cm);
    expect(off.stderr).toContain(
      "json: cannot unmarshal number into Go struct field ConfigMap.data of type string",
    );
    const svc = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  ports:
  - port: "80"
`;
    const s = await k(["apply", "-n", ns, "-f", "-"], svc);
    expect(s.stderr).toContain(
      'Service in version "v1" cannot be handled as a Service: json: cannot unmarshal string into Go struct field ServicePort.spec.ports.port of type int32',
    );
    // nothing was made: the namespace holds only the root CA publisher's map
    await rootCAIn(t, ns);
    expect((await k(["get", "cm,svc", "-n", ns, "-o", "name"])).stdout.trim()).toBe(
      "configmap/kube-root-ca.crt",
    );
    // onto an object that exists, apply and patch send a strategic merge patch: upstream's
    // converter refuses its result, quoting the patch as Go prints a map
    expect(
      (await k(["create", "cm", "port", "-n", ns, "--from-literal=port=8080", "--save-config"])).code,
    ).toBe(0);
    const applied = await k(["apply", "-n", ns, "-f", "-"], cm);
    expect(applied.code).not.toBe(0);
    const lastApplied = `{\\"apiVersion\\":\\"v1\\",\\"data\\":{\\"port\\":8080},\\"kind\\":\\"ConfigMap\\",\\"metadata\\":{\\"annotations\\":{},\\"name\\":\\"port\\",\\"namespace\\":\\"${ns}\\"}}\\n`;
    expect(applied.stderr.trim()).toBe(
      `The request is invalid: patch: Invalid value: "map[data:map[port:8080] metadata:map[annotations:map[kubectl.kubernetes.io/last-applied-configuration:${lastApplied}] creationTimestamp:<nil>]]": cannot convert int64 to string`,
    );
    const patched = await k(["patch", "cm", "port", "-n", ns, "-p", '{"data":{"port":8080}}']);
    expect(patched.stderr.trim()).toBe(
      'The request is invalid: patch: Invalid value: "map[data:map[port:8080]]": cannot convert int64 to string',
    );
    expect((await k(["get", "cm", "port", "-n", ns, "-o", "jsonpath={.data.port}"])).stdout).toBe("8080");
  });

  it("edit with a scripted editor", async () => {
    const ns = await freshNamespace(t);
    await k(["create", "configmap", "ed", "-n", ns, "--from-literal=k=old"]);
    const editor = join(tmp, "editor.sh");
    writeFileSync(editor, `#!/bin/sh\nsed -i 's/k: old/k: new/' "$1"\n`);
    chmodSync(editor, 0o755);
    const r = await kubectl(t, ["edit", "cm", "ed", "-n", ns], { env: { KUBE_EDITOR: editor } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe("configmap/ed edited");
    expect((await k(["get", "cm", "ed", "-n", ns, "-o", "jsonpath={.data.k}"])).stdout).toBe("new");
  });

  it("run creates a Pending pod; create deployment creates a Deployment; sort-by and wide", async () => {
    const ns = await freshNamespace(t);
    const r = await k(["run", "web", "-n", ns, "--image=busybox", "--restart=Never", "--", "sleep", "3600"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe("pod/web created");
    const pods = await k(["get", "pods", "-n", ns]);
    expect(pods.stdout).toMatch(/^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\nweb\s+0\/1\s+Pending\s+0\s+\S+\n$/);
    const wide = await k(["get", "pods", "-n", ns, "-o", "wide"]);
    expect(wide.stdout.split("\n")[0]).toMatch(
      /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES$/,
    );
    const pod = JSON.parse((await k(["get", "pod", "web", "-n", ns, "-o", "json"])).stdout);
    expect(pod.spec).toMatchObject({
      restartPolicy: "Never",
      dnsPolicy: "ClusterFirst",
      schedulerName: "default-scheduler",
      terminationGracePeriodSeconds: 30,
    });
    expect(pod.spec.containers[0].imagePullPolicy).toBe("Always");
    const cd = await k(["create", "deployment", "app", "-n", ns, "--image=busybox:1", "--replicas=3"]);
    expect(cd.code, cd.stderr).toBe(0);
    expect(cd.stdout.trim()).toBe("deployment.apps/app created");
    const dep = JSON.parse((await k(["get", "deploy", "app", "-n", ns, "-o", "json"])).stdout);
    expect(dep.spec.strategy).toEqual({
      type: "RollingUpdate",
      rollingUpdate: { maxSurge: "25%", maxUnavailable: "25%" },
    });
    expect(dep.spec).toMatchObject({ replicas: 3, revisionHistoryLimit: 10, progressDeadlineSeconds: 600 });
    // the scale subresource as a Table, with upstream's Scale columns
    const scale = await k(["get", "deploy", "app", "-n", ns, "--subresource=scale"]);
    expect(scale.stdout).toMatch(/^NAME\s+DESIRED\s+AVAILABLE\s+AGE\napp\s+3\s+\d+\s+\S+\n$/);
    await k(["create", "cm", "zz", "-n", ns]);
    await k(["create", "cm", "aa", "-n", ns]);
    await rootCAIn(t, ns);
    const sorted = await k(["get", "cm", "-n", ns, "--sort-by=.metadata.name", "-o", "name"]);
    expect(sorted.stdout.trim().split("\n")).toEqual([
      "configmap/aa",
      "configmap/kube-root-ca.crt",
      "configmap/zz",
    ]);
  });

  it("get -w prints each change, in two watches at once (one carried on the front door's relay)", async () => {
    const ns = await freshNamespace(t);
    // kube-root-ca.crt is there first: both watches list it before the changes below
    await rootCAIn(t, ns);
    const { spawn } = await import("node:child_process");
    // opened together: the second waits for the first one's relay and is carried on it
    const watch = (...args: string[]) => {
      const p = spawn("/usr/bin/kubectl", [
        "--kubeconfig",
        t.kubeconfigPath,
        "get",
        "cm",
        "-n",
        ns,
        "-w",
        ...args,
      ]);
      const w = { p, out: "" };
      p.stdout.on("data", (d) => (w.out += d));
      return w;
    };
    const names = watch("-o", "name");
    const table = watch();
    await new Promise((r) => setTimeout(r, 1500));
    await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: "w1" } });
    await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: "w2" } });
    await api(t, "PATCH", `/api/v1/namespaces/${ns}/configmaps/w1`, JSON.stringify({ data: { a: "b" } }), {
      "content-type": "application/merge-patch+json",
    });
    const lines = (s: string) => s.trim().split("\n");
    const deadline = Date.now() + 5000;
    while ((lines(names.out).length < 4 || lines(table.out).length < 5) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    names.p.kill();
    table.p.kill();
    // the table: its header once, then a row per change (NAME DATA AGE)
    expect(lines(table.out).map((l) => l.split(/\s+/).slice(0, 2).join(" "))).toEqual([
      "NAME DATA",
      "kube-root-ca.crt 1",
      "w1 0",
      "w2 0",
      "w1 1",
    ]);
    const out = names.out;
    expect(out.trim().split("\n")).toEqual([
      "configmap/kube-root-ca.crt",
      "configmap/w1",
      "configmap/w2",
      "configmap/w1",
    ]);
  });
});
