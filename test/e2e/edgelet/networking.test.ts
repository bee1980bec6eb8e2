// Cluster networking on a real containerd node (issue 28): Services through the edgelet's
// nftables proxier, cluster DNS, Service variables, the `kubernetes` Service with TLS verified
// against the pod's own CA, NodePorts from the machine, a headless StatefulSet's names, and
// NetworkPolicy. One control plane and one node for the file; the node runs on this machine
// (root network namespace) with an nftables table of its own, removed when it stops.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, hasKubectl, kubectl } from "../../helpers/cluster";
import { available, BUSYBOX, waitFor, withEdgeletNode } from "./harness";

const TOOLS = "127.0.0.1:5000/edgeplane/tools:1";
const hasNft = existsSync("/usr/sbin/nft") || existsSync("/usr/bin/nft");
if (!hasNft) console.warn("\n*** SKIPPED: networking e2e: nft not found (apt-get install nftables) ***\n");
const toolsImage = async () => {
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

const hasTools = available && (await toolsImage());
if (available && !hasTools)
  console.warn(
    "\n*** SKIPPED: networking e2e: no edgeplane/tools image in the local registry (npm run setup:containerd) ***\n",
  );

const NODE = `net-e2e-${Math.random().toString(36).slice(2, 7)}`;

describe.skipIf(!available || !hasNft || !hasKubectl || !hasTools)(
  "cluster networking on a containerd node",
  () => {
    const suite = withEdgeletNode(NODE, "net");
    const k = (args: string[], input?: string) =>
      kubectl(suite.server, args, input === undefined ? {} : { input });
    const sh = async (ns: string, pod: string, script: string) => {
      const r = await k(["exec", "-n", ns, pod, "--", "sh", "-c", script]);
      return { ...r, out: r.stdout.trim() };
    };
    const apply = async (yaml: string) => {
      const r = await k(["apply", "-f", "-"], yaml);
      if (r.code !== 0) throw new Error(`kubectl apply: ${r.stderr}`);
    };
    const waitReady = (ns: string, selector: string, n: number) =>
      waitFor<any[]>(
        `${n} ready pods ${selector}`,
        async () => {
          const r = await api(
            suite.server,
            "GET",
            `/api/v1/namespaces/${ns}/pods?labelSelector=${encodeURIComponent(selector)}`,
          );
          const ready = (r.json?.items ?? []).filter(
            (p: any) =>
              !p.metadata.deletionTimestamp &&
              p.status?.conditions?.some((c: any) => c.type === "Ready" && c.status === "True"),
          );
          return ready.length >= n ? ready : undefined;
        },
        90_000,
        300,
      ).catch(async (e) => {
        const pods = await api(suite.server, "GET", `/api/v1/namespaces/${ns}/pods`);
        const states = (pods.json?.items ?? []).map(
          (p: any) => `${p.metadata.name}: ${JSON.stringify(p.status)}`,
        );
        throw new Error(`${e.message}\n${states.join("\n")}\nedgelet:\n${suite.edgelet.output.slice(-4000)}`);
      });
    /** a busybox httpd on 8080 answering its hostname, as a containers: list entry */
    const server = (name: string) =>
      [
        `        - name: ${name}`,
        `          image: ${BUSYBOX}`,
        `          command: ["sh", "-c", "mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www"]`,
        "          ports: [{containerPort: 8080, name: http}]",
        "          readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}",
      ].join("\n");
    let ns: string;
    let clusterIP: string;
    let nodeIP: string;

    beforeAll(async () => {
      ns = suite.ns;
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
      containers:
${server("httpd")}`);
      const ex = await k(["expose", "deployment", "web", "-n", ns, "--port", "80", "--target-port", "8080"]);
      expect(ex.code, ex.stderr).toBe(0);
      clusterIP = (await api(suite.server, "GET", `/api/v1/namespaces/${ns}/services/web`)).json.spec
        .clusterIP;
      await apply(`
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: ${ns}, labels: {app: client}}
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - {name: c, image: ${TOOLS}, command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]}
`);
      await waitReady(ns, "app=web", 2);
      await waitReady(ns, "app=client", 1);
      const node = (await api(suite.server, "GET", `/api/v1/nodes/${NODE}`)).json;
      nodeIP = node.status.addresses.find((a: any) => a.type === "InternalIP").address;
    }, 180_000);

    afterAll(async () => {
      // the node's table goes with the edgelet (withEdgeletNode stops it): checked in the last test
    });

    it("a Service answers by short name, namespace-qualified name, FQDN and ClusterIP, from both endpoints", {
      timeout: 120_000,
    }, async () => {
      for (const target of ["web", `web.${ns}`, `web.${ns}.svc.cluster.local`, clusterIP]) {
        // curl: the glibc resolver a real client uses (busybox's static wget crashes on names here)
        const r = await sh(ns, "client", `curl -sS -m 3 http://${target}/`);
        expect(r.code, `${target}: ${r.stderr}`).toBe(0);
        expect(r.out).toMatch(/^web-/);
      }
      const r = await sh(ns, "client", "for i in $(seq 30); do curl -sS -m 3 http://web/ || echo FAIL; done");
      const answers = r.out.split("\n");
      expect(answers).toHaveLength(30);
      expect(answers).not.toContain("FAIL");
      expect(new Set(answers).size).toBe(2);
    });

    it("pods get cluster DNS settings and the Service variables", async () => {
      const resolv = await sh(ns, "client", "cat /etc/resolv.conf");
      expect(resolv.out).toContain("nameserver 10.96.0.10");
      expect(resolv.out).toMatch(
        new RegExp(`search ${ns}\\.svc\\.cluster\\.local svc\\.cluster\\.local cluster\\.local`),
      );
      expect(resolv.out).toContain("options ndots:5");
      const env = await sh(ns, "client", "env | sort");
      expect(env.out).toContain("KUBERNETES_SERVICE_HOST=10.96.0.1");
      expect(env.out).toContain("KUBERNETES_SERVICE_PORT=443");
      expect(env.out).toContain(`WEB_SERVICE_HOST=${clusterIP}`);
      expect(env.out).toContain(`WEB_PORT=tcp://${clusterIP}:80`);
      expect(env.out).toContain(`WEB_PORT_80_TCP_ADDR=${clusterIP}`);
    });

    it("a pod reaches the apiserver at https://kubernetes.default.svc, verifying TLS with its own CA", {
      timeout: 90_000,
    }, async () => {
      const sa = "/var/run/secrets/kubernetes.io/serviceaccount";
      const r = await sh(
        ns,
        "client",
        `curl -sS -o /dev/null -w '%{http_code}' --cacert ${sa}/ca.crt -H "Authorization: Bearer $(cat ${sa}/token)" https://kubernetes.default.svc/api`,
      );
      expect(r.code, r.stderr).toBe(0);
      expect(r.out).toBe("200");
      // and verification is real: the same CA and address under a name the certificate lacks is refused
      const bad = await sh(
        ns,
        "client",
        `curl -sS -o /dev/null --cacert ${sa}/ca.crt --resolve elsewhere.example:443:10.96.0.1 https://elsewhere.example/api; echo rc=$?`,
      );
      expect(bad.out).toMatch(/rc=60/);
    });

    it("a NodePort answers from the machine on the node's InternalIP and on 127.0.0.1", {
      timeout: 60_000,
    }, async () => {
      const r = await k(["patch", "service", "web", "-n", ns, "-p", '{"spec":{"type":"NodePort"}}']);
      expect(r.code, r.stderr).toBe(0);
      const svc = (await api(suite.server, "GET", `/api/v1/namespaces/${ns}/services/web`)).json;
      const port = svc.spec.ports[0].nodePort;
      for (const host of [nodeIP, "127.0.0.1"]) {
        const text = await waitFor(
          `NodePort ${host}:${port}`,
          async () => {
            const res = await fetch(`http://${host}:${port}/`, { signal: AbortSignal.timeout(2000) });
            return res.ok ? await res.text() : undefined;
          },
          20_000,
          200,
        );
        expect(text).toMatch(/^web-/);
      }
    });

    it("a headless StatefulSet's pod resolves by name; a missing name is NXDOMAIN", {
      timeout: 120_000,
    }, async () => {
      await apply(`
apiVersion: v1
kind: Service
metadata: {name: db, namespace: ${ns}}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{name: http, port: 8080}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: ${ns}}
spec:
  serviceName: db
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
${server("httpd")}`);
      const [pod] = await waitReady(ns, "app=db", 1);
      const name = `db-0.db.${ns}.svc.cluster.local`;
      const r = await waitFor(
        `${name} resolves`,
        async () => {
          const x = await sh(ns, "client", `nslookup ${name}`);
          return x.out.includes(pod.status.podIP) ? x : undefined;
        },
        15_000,
        300,
      );
      expect(r.out).toContain(pod.status.podIP);
      const srv = await sh(ns, "client", `nslookup -type=SRV _http._tcp.db.${ns}.svc.cluster.local`);
      expect(srv.out).toContain(`db-0.db.${ns}.svc.cluster.local`);
      const missing = await sh(ns, "client", `nslookup nope.${ns}.svc.cluster.local`);
      expect(missing.out + missing.stderr).toMatch(/NXDOMAIN/);
    });

    it("deleting one endpoint pod: once it is out of the Service, no request fails", {
      timeout: 120_000,
    }, async () => {
      const pods = await waitReady(ns, "app=web", 2);
      const victim = pods[0];
      await api(suite.server, "DELETE", `/api/v1/namespaces/${ns}/pods/${victim.metadata.name}`);
      // the endpoint leaves the ready set, then the rule
      await waitFor(
        "endpoint gone",
        async () => {
          const r = await api(
            suite.server,
            "GET",
            `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dweb`,
          );
          const ready = (r.json?.items ?? [])
            .flatMap((s: any) => s.endpoints ?? [])
            .filter((e: any) => e.conditions?.ready);
          return ready.every((e: any) => e.addresses[0] !== victim.status.podIP) ? true : undefined;
        },
        30_000,
        100,
      );
      const rules = () =>
        execFileSync("nft", ["list", "table", "ip", suite.edgelet.nftTable], { encoding: "utf8" });
      await waitFor(
        "rule gone",
        async () =>
          !rules().includes(`${victim.status.podIP} . 8080`) &&
          !rules().includes(`dnat to ${victim.status.podIP}:8080`),
        5_000,
        50,
      );
      const r = await sh(ns, "client", "for i in $(seq 20); do curl -sS -m 3 http://web/ || echo FAIL; done");
      expect(r.out.split("\n")).not.toContain("FAIL");
    });

    it("NetworkPolicy: deny all ingress blocks the client; allowing app=client lets it through", {
      timeout: 90_000,
    }, async () => {
      await apply(`
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-all, namespace: ${ns}}
spec: {podSelector: {}, policyTypes: [Ingress]}
`);
      await waitFor(
        "blocked",
        async () => {
          const r = await sh(ns, "client", "curl -sS -m 2 -o /dev/null http://web/ 2>/dev/null; echo rc=$?");
          return r.out === "rc=28" ? true : undefined; // timed out: dropped
        },
        20_000,
        200,
      ).catch((e) => {
        const table = execFileSync("nft", ["list", "table", "ip", suite.edgelet.nftTable], {
          encoding: "utf8",
        });
        throw new Error(
          `${e.message}\n${table.slice(table.indexOf("policy"), table.indexOf("policy") + 3000)}\n${suite.edgelet.output.slice(-2000)}`,
        );
      });
      await apply(`
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-client, namespace: ${ns}}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{podSelector: {matchLabels: {app: client}}}], ports: [{port: http}]}]
`);
      const ok = await waitFor(
        "allowed",
        async () => {
          const r = await sh(ns, "client", "curl -sS -m 2 http://web/");
          return r.code === 0 ? r.out : undefined;
        },
        20_000,
        200,
      );
      expect(ok).toMatch(/^web-/);
      await k(["delete", "networkpolicy", "--all", "-n", ns]);
    });

    it("the node reports its rules; stopping the edgelet removes its table", {
      timeout: 60_000,
    }, async () => {
      const node = (await api(suite.server, "GET", `/api/v1/nodes/${NODE}`)).json;
      const cond = node.status.conditions.find((c: any) => c.type === "NetworkRulesApplied");
      expect(cond?.status).toBe("True");
      await suite.edgelet.stop();
      const tables = execFileSync("nft", ["list", "tables"], { encoding: "utf8" });
      expect(tables).not.toContain(suite.edgelet.nftTable);
    });
  },
);
