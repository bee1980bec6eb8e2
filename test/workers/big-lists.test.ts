// Lists larger than one Durable Object call can answer. workerd refuses a call's answer over
// 32 MiB; a list read whole in one call then failed with a 500, whatever the client asked
// for. JSON lists of a resource's own shape were already streamed; these are the others: a
// list as YAML, a deletecollection's answer (after every object was deleted), a resource kept
// in another's shape (events.k8s.io's events are stored as core events), and a Table of it as
// kubectl asks. ~40 MB of objects, on a server of its own.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import {
  api,
  freshNamespace,
  hasKubectl,
  kubectl,
  notRootCA,
  ROOT_CA_MAP,
  rootCAIn,
} from "../helpers/cluster";
import { type OwnServer, removeStateDir, startOwnServer, tempStateDir } from "../helpers/own-server";

const stateDir = tempStateDir("edgeplane-big-lists-");
let server: OwnServer;
let ns: string;

/** 40 ConfigMaps of ~1 MB: a 40 MB list. */
const MAPS = 40;
const MAP_DATA = "m".repeat(1000 * 1000 - 100);
/** 160 events with ~250 KB of annotations each (the most annotations may hold is 256 KiB): 40 MB. */
const EVENTS = 160;
const EVENT_PAD = "e".repeat(250 * 1000);

async function createAll(count: number, post: (i: number) => Promise<{ status: number; text: string }>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < count) {
        const r = await post(next++);
        expect(r.status, r.text.slice(0, 300)).toBe(201);
      }
    }),
  );
}

beforeAll(async () => {
  server = await startOwnServer({ stateDir });
  ns = await freshNamespace(server, "big");
  await rootCAIn(server, ns);
  await createAll(MAPS, (i) =>
    api(server, "POST", `/api/v1/namespaces/${ns}/configmaps`, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: `cm-${i}` },
      data: { big: MAP_DATA },
    }),
  );
  await createAll(EVENTS, (i) =>
    api(server, "POST", `/apis/events.k8s.io/v1/namespaces/${ns}/events`, {
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      metadata: { name: `ev-${i}`, annotations: { pad: EVENT_PAD } },
      eventTime: "2026-12-01T10:00:00.000000Z",
      reportingController: "example.com/big-lists",
      reportingInstance: "big-lists-1",
      action: "Testing",
      reason: "Big",
      type: "Normal",
      note: `event ${i}`,
      regarding: { kind: "Pod", namespace: ns, name: `pod-${i}`, apiVersion: "v1" },
    }),
  );
}, 120_000);

afterAll(async () => {
  await server?.stop();
  removeStateDir(stateDir);
});

describe("lists over 32 MiB", () => {
  it("lists ConfigMaps as YAML", async () => {
    const r = await api(server, "GET", `/api/v1/namespaces/${ns}/configmaps`, undefined, {
      accept: "application/yaml",
    });
    expect(r.status, r.text.slice(0, 300)).toBe(200);
    expect(r.text.length).toBeGreaterThan(32 * 1024 * 1024);
    const list = parseYaml(r.text, { maxAliasCount: -1 });
    expect(list.kind).toBe("ConfigMapList");
    // the maps made here, and the root CA publisher's
    expect(list.items).toHaveLength(MAPS + 1);
    expect(list.items.filter(notRootCA).every((m: any) => m.data.big === MAP_DATA)).toBe(true);
  });

  it("lists events.k8s.io events, in their own shape", async () => {
    const r = await api(server, "GET", `/apis/events.k8s.io/v1/namespaces/${ns}/events`);
    expect(r.status, r.text.slice(0, 300)).toBe(200);
    expect(r.json.kind).toBe("EventList");
    expect(r.json.apiVersion).toBe("events.k8s.io/v1");
    expect(r.json.items).toHaveLength(EVENTS);
    const notes = new Set(r.json.items.map((e: any) => e.note));
    expect(notes.size).toBe(EVENTS);
    for (const e of r.json.items) {
      expect(e.regarding.name).toBe(`pod-${e.note.slice("event ".length)}`);
      expect(e.metadata.annotations.pad).toBe(EVENT_PAD);
    }
  });

  it("deletes a collection and answers with every object it deleted", async () => {
    const r = await api(server, "DELETE", `/api/v1/namespaces/${ns}/configmaps`);
    expect(r.status, r.text.slice(0, 300)).toBe(200);
    expect(r.json.kind).toBe("ConfigMapList");
    expect(r.json.items.map((m: any) => m.metadata.name).sort()).toEqual(
      [...Array.from({ length: MAPS }, (_, i) => `cm-${i}`), ROOT_CA_MAP].sort(),
    );
    // only kube-root-ca.crt may be there again: its publisher makes it anew at once
    const left = await api(server, "GET", `/api/v1/namespaces/${ns}/configmaps`);
    expect(left.json.items.filter(notRootCA)).toEqual([]);
  });

  it.skipIf(!hasKubectl)("lists them with kubectl get, as a Table", async () => {
    const r = await kubectl(server, ["get", "events.events.k8s.io", "-n", ns, "--no-headers"]);
    expect(r.code, r.stderr).toBe(0);
    const rows = r.stdout.trim().split("\n");
    expect(rows).toHaveLength(EVENTS);
    expect(rows.filter((row) => /\bBig\b/.test(row))).toHaveLength(EVENTS);
  });
});
