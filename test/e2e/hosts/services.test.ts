// Services, cluster DNS, the kubernetes Service and NetworkPolicy across two real hosts (issue
// 28's Done-when list): a Deployment spread over both hosts behind a Service, reached by every
// name and the ClusterIP from a pod on each host, with both endpoints answering; NodePorts on
// each host's InternalIP from the machine; the apiserver over verified TLS from a pod; a
// headless StatefulSet's pod by name; a NetworkPolicy enforced for a client on the other host.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Hosts, hostsUnavailable, startHosts } from "../../../local-engine/hosts/hosts";
import { api, freshNamespace, kubectl, until } from "../../helpers/cluster";
import { type OwnServer, removeStateDir, startOwnServer } from "../../helpers/own-server";

const TOOLS = "127.0.0.1:5000/edgeplane/tools:1";
const BUSYBOX = "127.0.0.1:5000/edgeplane/busybox:1";
const tools = async () => {
  try {
    const r = await fetch("http://127.0.0.1:5000/v2/edgeplane/tools/manifests/1", {
      method: "HEAD",
      headers: { accept: "application/vnd.oci.image.manifest.v1+json" },
    });
    return r.ok;
  } catch {
    return false;
  }
};
const why =
  hostsUnavailable() ?? ((await tools()) ? undefined : "no edgeplane/tools image (npm run setup:containerd)");
if (why) console.warn(`\n*** SKIPPED: Services across hosts: ${why} ***\n`);

const HTTPD = "mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www";
const SLEEP = "trap 'exit 0' TERM; sleep 3600 & wait";

describe.skipIf(!!why)("Services, DNS and NetworkPolicy across two hosts", () => {
  let server: OwnServer;
  let hosts: Hosts;
  let ns: string;
  let ns2: string;
  let clusterIP: string;

  const k = (args: string[], input?: string) => kubectl(server, args, input === undefined ? {} : { input });
  const apply = async (yaml: string) => {
    const r = await k(["apply", "-f", "-"], yaml);
    if (r.code !== 0) throw new Error(`kubectl apply: ${r.stderr}`);
  };
  const sh = async (pod: string, script: string) => {
    const r = await k(["exec", "-n", ns, pod, "--", "sh", "-c", script]);
    return { ...r, out: r.stdout.trim() };
  };
  const ready = (namespace: string, selector: string, n: number) =>
    until(
      `${n} ready pods ${selector}`,
      async () => {
        const r = await api(
          server,
          "GET",
          `/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(selector)}`,
        );
        const pods = (r.json?.items ?? []).filter((p: any) =>
          p.status?.conditions?.some((c: any) => c.type === "Ready" && c.status === "True"),
        );
        return pods.length >= n ? pods : undefined;
      },
      120_000,
      300,
    ).catch((e) => {
      throw new Error(
        `${e.message}\n${hosts.hosts.map((h) => `${h.name}:\n${h.edgeletLog().slice(-1500)}`).join("\n")}`,
      );
    });
  const client = (name: string, node: string) => `
apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${ns}, labels: {app: client}}
spec:
  nodeName: ${node}
  terminationGracePeriodSeconds: 0
  containers: [{name: c, image: ${TOOLS}, command: ["sh", "-c", "${SLEEP}"]}]
`;

  beforeAll(async () => {
    server = await startOwnServer();
    hosts = await startHosts({ count: 2, server: { url: server.url, token: server.token } });
    ns = await freshNamespace(server, "svc-hosts");
    ns2 = await freshNamespace(server, "svc-hosts-sts");
    await apply(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ${ns}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - {labelSelector: {matchLabels: {app: web}}, topologyKey: kubernetes.io/hostname}
      containers:
        - name: httpd
          image: ${BUSYBOX}
          command: ["sh", "-c", "${HTTPD}"]
          ports: [{containerPort: 8080, name: http}]
          readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
---${client("client-1", hosts.nodes[0]!)}---${client("client-2", hosts.nodes[1]!)}`);
    const ex = await k([
      "expose",
      "deployment",
      "web",
      "-n",
      ns,
      "--port",
      "80",
      "--target-port",
      "8080",
      "--type",
      "NodePort",
    ]);
    if (ex.code !== 0) throw new Error(ex.stderr);
    clusterIP = (await api(server, "GET", `/api/v1/namespaces/${ns}/services/web`)).json.spec.clusterIP;
    const web = await ready(ns, "app=web", 2);
    expect(new Set(web.map((p: any) => p.spec.nodeName)).size).toBe(2);
    await ready(ns, "app=client", 2);
  }, 240_000);

  afterAll(async () => {
    await hosts?.stop();
    await server?.stop();
    removeStateDir(server?.stateDir);
  }, 60_000);

  it("from a pod on either host: short name, namespace name, FQDN and ClusterIP answer; both endpoints serve", {
    timeout: 120_000,
  }, async () => {
    for (const pod of ["client-1", "client-2"]) {
      for (const target of ["web", `web.${ns}`, `web.${ns}.svc.cluster.local`, clusterIP]) {
        const r = await sh(pod, `curl -sS -m 3 http://${target}/`);
        expect(r.code, `${pod} -> ${target}: ${r.stderr}`).toBe(0);
        expect(r.out).toMatch(/^web-/);
      }
      const r = await sh(pod, "for i in $(seq 30); do curl -sS -m 3 http://web/ || echo FAIL; done");
      const answers = r.out.split("\n");
      expect(answers).not.toContain("FAIL");
      expect(new Set(answers).size, `${pod}: ${answers.join(" ")}`).toBe(2);
    }
  });

  it("the NodePort answers from the machine on each host's InternalIP", { timeout: 60_000 }, async () => {
    const svc = (await api(server, "GET", `/api/v1/namespaces/${ns}/services/web`)).json;
    const port = svc.spec.ports[0].nodePort;
    for (const h of hosts.hosts) {
      const text = await until(
        `NodePort on ${h.ip}`,
        async () => {
          const r = await fetch(`http://${h.ip}:${port}/`, { signal: AbortSignal.timeout(2000) });
          return r.ok ? await r.text() : undefined;
        },
        20_000,
        200,
      );
      expect(text).toMatch(/^web-/);
    }
  });

  it("a pod on the second host reaches the apiserver at https://kubernetes.default.svc with its token and CA", async () => {
    const sa = "/var/run/secrets/kubernetes.io/serviceaccount";
    const r = await sh(
      "client-2",
      `curl -sS -o /dev/null -w '%{http_code}' --cacert ${sa}/ca.crt -H "Authorization: Bearer $(cat ${sa}/token)" https://kubernetes.default.svc/api`,
    );
    expect(r.out, r.stderr).toBe("200");
  });

  it("a headless StatefulSet's pod resolves by name from the other host; a missing name is NXDOMAIN", {
    timeout: 120_000,
  }, async () => {
    await apply(`
apiVersion: v1
kind: Service
metadata: {name: web, namespace: ${ns2}}
spec: {clusterIP: None, selector: {app: db}, ports: [{name: http, port: 8080}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web, namespace: ${ns2}}
spec:
  serviceName: web
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      nodeName: ${hosts.nodes[0]}
      terminationGracePeriodSeconds: 1
      containers:
        - {name: httpd, image: ${BUSYBOX}, command: ["sh", "-c", "${HTTPD}"], readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}}
`);
    const [pod] = await ready(ns2, "app=db", 1);
    const name = `web-0.web.${ns2}.svc.cluster.local`;
    const got = await until(
      `${name} resolves`,
      async () => {
        const r = await sh("client-2", `getent hosts ${name} || nslookup ${name}`);
        return r.out.includes(pod.status.podIP) ? r.out : undefined;
      },
      15_000,
      300,
    );
    expect(got).toContain(pod.status.podIP);
    expect((await sh("client-2", `curl -sS -m 3 http://${name}:8080/`)).out).toBe("web-0");
    const missing = await sh("client-2", `nslookup web-9.web.${ns2}.svc.cluster.local`);
    expect(missing.out + missing.stderr).toMatch(/NXDOMAIN/);
  });

  it("NetworkPolicy: deny all ingress blocks the client on the other host; allowing app=client lets it through", {
    timeout: 90_000,
  }, async () => {
    const web = await ready(ns, "app=web", 2);
    const remote = web.find((p: any) => p.spec.nodeName === hosts.nodes[0])!;
    const url = `http://${remote.status.podIP}:8080/`;
    await apply(`
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-all, namespace: ${ns}}
spec: {podSelector: {}, policyTypes: [Ingress]}
`);
    await until(
      "blocked",
      async () => {
        const r = await sh("client-2", `curl -sS -m 2 -o /dev/null ${url} 2>/dev/null; echo rc=$?`);
        return r.out === "rc=28" ? true : undefined;
      },
      20_000,
      200,
    );
    await apply(`
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-client, namespace: ${ns}}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{podSelector: {matchLabels: {app: client}}}], ports: [{port: http}]}]
`);
    const ok = await until(
      "allowed",
      async () => {
        const r = await sh("client-2", `curl -sS -m 2 ${url}`);
        return r.code === 0 ? r.out : undefined;
      },
      20_000,
      200,
    );
    expect(ok).toBe(remote.metadata.name);
  });
});
