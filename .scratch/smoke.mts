import { startDevServer } from "../local-engine/devserver";
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
const s = await startDevServer({ stateDir: mkdtempSync("/tmp/shs-"), quiet: true, vars: { EDGEPLANE_STORE_SHARDS: "pods=4,leases=4" } });
const k = (...a: string[]) => execFileSync("kubectl", ["--kubeconfig", s.kubeconfigPath, ...a], { encoding: "utf8" });
try {
  for (const ns of ["a", "b", "c", "d", "e"]) { k("create", "ns", ns); }
  for (const ns of ["a", "b", "c", "d", "e"]) for (let i = 0; i < 3; i++) k("run", `p${i}`, "-n", ns, "--image=busybox");
  console.log(k("get", "pods", "-A"));
  console.log(k("get", "pods", "-A", "--chunk-size=4", "-o", "name").split("\n").length);
  const list = JSON.parse(k("get", "--raw", "/api/v1/pods?limit=5"));
  console.log(list.metadata, list.items.map((p: any) => p.metadata.namespace + "/" + p.metadata.name + "@" + p.metadata.resourceVersion));
  console.log(k("get", "--raw", `/api/v1/pods?watch=1&resourceVersion=${list.metadata.resourceVersion}&timeoutSeconds=1`).slice(0,300));
  k("label", "pod", "p1", "-n", "c", "x=y");
  console.log(k("get", "--raw", `/api/v1/pods?watch=1&resourceVersion=${list.metadata.resourceVersion}&timeoutSeconds=1`).split("\n").map(l => l.slice(0, 150)).join("\n"));
  console.log(k("get", "--raw", `/api/v1/pods?watch=1&timeoutSeconds=1`).split("\n").map(l => l.slice(0, 150)).join("\n"));
  console.log(k("get", "leases", "-A"));
} catch (e) { console.error(String(e)); console.error((s as any).output?.().slice(-3000)); }
await s.stop();
