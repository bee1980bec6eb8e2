// A write acknowledged to a client survives a crash: SIGKILL of wrangler and workerd in the
// middle of a write load, then a restart on the same state dir finds every acknowledged object.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api } from "../helpers/cluster";
import { type OwnServer, removeStateDir, startOwnServer, tempStateDir } from "../helpers/own-server";

const CLIENTS = 8;
const LOAD_MS = 2000;
const ns = "durable";

interface Acked {
  name: string;
  uid: string;
  rv: string;
  data: Record<string, string>;
}

const stateDir = tempStateDir("edgeplane-durability-");
let server: OwnServer | undefined;

beforeAll(async () => {
  server = await startOwnServer({ stateDir });
});

afterAll(async () => {
  await server?.stop();
  removeStateDir(stateDir);
});

function payload(client: number, seq: number): Record<string, string> {
  return {
    client: String(client),
    seq: String(seq),
    body: `${client}:${seq}:`.padEnd(512, String.fromCharCode(97 + ((client + seq) % 26))),
  };
}

describe("durability across a crash", () => {
  it("every object acknowledged with 201 before a SIGKILL is there after the restart", async () => {
    const first = server!;
    expect(
      (
        await api(first, "POST", "/api/v1/namespaces", {
          apiVersion: "v1",
          kind: "Namespace",
          metadata: { name: ns },
        })
      ).status,
    ).toBe(201);

    // an allocated cluster IP is part of what must survive: the ledger is rebuilt from the store
    const svc = await api(first, "POST", `/api/v1/namespaces/${ns}/services`, {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "held" },
      spec: { ports: [{ port: 80 }] },
    });
    expect(svc.status, svc.text).toBe(201);
    const heldIP: string = svc.json.spec.clusterIP;

    const acked: Acked[] = [];
    const failures: string[] = [];
    let stop = false;
    let inFlightAtKill = 0;
    const load = Array.from({ length: CLIENTS }, async (_, c) => {
      for (let seq = 0; !stop; seq++) {
        const name = `c${c}-${seq}`;
        const data = payload(c, seq);
        inFlightAtKill++;
        try {
          const r = await api(first, "POST", `/api/v1/namespaces/${ns}/configmaps`, {
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name, labels: { client: String(c) } },
            data,
          });
          if (r.status === 201)
            acked.push({ name, uid: r.json.metadata.uid, rv: r.json.metadata.resourceVersion, data });
          else if (!stop) failures.push(`${name}: ${r.status} ${r.text.slice(0, 200)}`);
        } catch (e) {
          // the connection dies with the server: not acknowledged, so no promise made
          if (!stop) failures.push(`${name}: ${(e as Error).message}`);
          return;
        } finally {
          inFlightAtKill--;
        }
      }
    });
    await new Promise((r) => setTimeout(r, LOAD_MS));
    const inFlight = inFlightAtKill;
    const ackedBeforeKill = acked.length;
    stop = true;
    await first.kill();
    await Promise.allSettled(load);
    console.log(
      `durability: ${ackedBeforeKill} acknowledged before the kill, ${inFlight} requests in flight at the kill`,
    );
    expect(failures).toEqual([]);
    expect(ackedBeforeKill).toBeGreaterThan(20);
    expect(inFlight).toBeGreaterThan(0); // the crash hit a running load, not an idle server
    // anything acknowledged after kill() began is a reply the server sent before it died: keep it
    const promised = acked.slice();

    server = await startOwnServer({ stateDir, port: first.port });
    const second = server;
    const list = await api(second, "GET", `/api/v1/namespaces/${ns}/configmaps`);
    expect(list.status).toBe(200);
    const stored = new Map<string, any>(list.json.items.map((o: any) => [o.metadata.name, o]));
    const missing = promised.filter((a) => !stored.has(a.name)).map((a) => a.name);
    expect(missing, "acknowledged but lost").toEqual([]);
    for (const a of promised) {
      const o = stored.get(a.name);
      expect({ name: a.name, uid: o.metadata.uid, rv: o.metadata.resourceVersion, data: o.data }).toEqual({
        name: a.name,
        uid: a.uid,
        rv: a.rv,
        data: a.data,
      });
    }
    // each one also reads back on its own, and the store keeps counting forward
    for (const a of promised.slice(0, 10)) {
      const g = await api(second, "GET", `/api/v1/namespaces/${ns}/configmaps/${a.name}`);
      expect(g.status).toBe(200);
      expect(g.json.data).toEqual(a.data);
    }
    const maxRV = Math.max(...list.json.items.map((o: any) => Number(o.metadata.resourceVersion)));
    expect(Number(list.json.metadata.resourceVersion)).toBeGreaterThanOrEqual(maxRV);
    const after = await api(second, "POST", `/api/v1/namespaces/${ns}/configmaps`, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "after-restart" },
      data: { ok: "1" },
    });
    expect(after.status).toBe(201);
    expect(Number(after.json.metadata.resourceVersion)).toBeGreaterThan(maxRV);
    // a name taken before the crash is still taken
    const again = await api(second, "POST", `/api/v1/namespaces/${ns}/configmaps`, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: promised[0].name },
    });
    expect(again.status).toBe(409);
    expect(again.json.reason).toBe("AlreadyExists");
    // and so is the cluster IP handed out before it
    const taken = await api(second, "POST", `/api/v1/namespaces/${ns}/services`, {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "thief" },
      spec: { clusterIP: heldIP, ports: [{ port: 80 }] },
    });
    expect(taken.status, taken.text).toBe(422);
    expect(taken.json.message).toContain(`failed to allocate IP ${heldIP}: provided IP is already allocated`);
  }, 120_000); // includes a restart of the engine
});
