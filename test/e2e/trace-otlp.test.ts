// Pod flow traces exported as OTLP/HTTP JSON (docs/trace.md): a collector on a local port
// receives one trace per pod (the uid as trace id) with a span per stage; a malformed endpoint
// is reported at start and traces are still kept and readable.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { startDevServer } from "../../local-engine/devserver";
import { api, freshNamespace, until } from "../helpers/cluster";
import { removeStateDir, tempStateDir } from "../helpers/own-server";

type Dev = Awaited<ReturnType<typeof startDevServer>>;
const started: { s: Dev; dir: string }[] = [];
let collector: Server | undefined;

afterAll(async () => {
  for (const { s, dir } of started) {
    await s.stop();
    removeStateDir(dir);
  }
  collector?.close();
});

async function server(vars: Record<string, string>): Promise<Dev> {
  const dir = tempStateDir("trace-otlp");
  const s = await startDevServer({ stateDir: dir, quiet: true, vars });
  started.push({ s, dir });
  return s;
}

const pod = (name: string) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name },
  spec: { containers: [{ name: "c", image: "busybox" }] },
});

describe("OTLP export of pod traces", () => {
  it("sends each pod's stages to the collector as one trace", async () => {
    const bodies: any[] = [];
    collector = createServer((req, res) => {
      let text = "";
      req.on("data", (d) => (text += d));
      req.on("end", () => {
        bodies.push({ path: req.url, type: req.headers["content-type"], body: JSON.parse(text) });
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((r) => collector!.listen(0, "127.0.0.1", r));
    const port = (collector.address() as AddressInfo).port;
    const s = await server({ EDGEPLANE_OTLP_ENDPOINT: `http://127.0.0.1:${port}/v1/traces` });
    const ns = await freshNamespace(s);
    const created = await api(s, "POST", `/api/v1/namespaces/${ns}/pods`, pod("exported"));
    expect(created.status).toBe(201);
    const uid: string = created.json.metadata.uid;
    const spans = await until("the collector has the pod's create", async () => {
      const all = bodies.flatMap((b) =>
        b.body.resourceSpans.flatMap((r: any) =>
          r.scopeSpans.flatMap((x: any) => x.spans.map((sp: any) => ({ ...sp, resource: r.resource }))),
        ),
      );
      const mine = all.filter((sp: any) => sp.traceId === uid.replace(/-/g, ""));
      return mine.some((sp: any) => sp.name === "2.4 stored") && mine;
    });
    expect(bodies[0]).toMatchObject({ path: "/v1/traces", type: "application/json" });
    const names = spans.map((sp: any) => sp.name);
    for (const n of [
      "1.3 request received",
      "2.1 authentication",
      "2.2 authorization",
      "2.3 admission",
      "2.4 stored",
    ])
      expect(names).toContain(n);
    const stored = spans.find((sp: any) => sp.name === "2.4 stored");
    expect(stored.spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(BigInt(stored.endTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(stored.startTimeUnixNano));
    expect(stored.attributes).toContainEqual({ key: "edgeplane.flow.step", value: { stringValue: "2.4" } });
    expect(stored.resource.attributes).toContainEqual({
      key: "k8s.pod.name",
      value: { stringValue: "exported" },
    });
    expect(stored.resource.attributes).toContainEqual({
      key: "k8s.namespace.name",
      value: { stringValue: ns },
    });
  });

  it("a malformed endpoint is reported at start; traces stay local", async () => {
    const s = await server({ EDGEPLANE_OTLP_ENDPOINT: "collector:4318" });
    await until("the report", async () => s.output().includes("EDGEPLANE_OTLP_ENDPOINT"));
    expect(s.output()).toContain(
      'EDGEPLANE_OTLP_ENDPOINT "collector:4318" is not an http(s) URL: pod traces are kept locally and not exported',
    );
    const ns = await freshNamespace(s);
    expect((await api(s, "POST", `/api/v1/namespaces/${ns}/pods`, pod("local"))).status).toBe(201);
    const t = await api(s, "GET", `/apis/trace.edgeplane.dev/v1alpha1/namespaces/${ns}/podtraces/local`);
    expect(t.status).toBe(200);
    expect(t.json.stages.map((x: any) => x.step)).toContain("2.4");
  });
});
