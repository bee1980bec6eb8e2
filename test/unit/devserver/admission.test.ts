// The front door's fair queue: at most `limit` ordinary requests in workerd at a time, the
// rest admitted clients in turn and each client's in arrival order; watches and other
// long-running requests never wait or count; a request that holds its place too long gives
// it up. Priority levels: node agents' and the control plane's credentials (as the Worker
// names them) have seats no crowd takes; requests without a verified credential share a few
// seats, one client per source address.
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import {
  admissionQueue,
  admitLimit,
  CredentialLevels,
  classify,
  credentialOf,
  longRunning,
  requestHead,
} from "../../../local-engine/fair-queue";
import {
  answerInOrder,
  get,
  learn,
  oneByOne,
  type Stops,
  frontDoor as startDoor,
  heldUpstream as startUpstream,
  until,
} from "../../helpers/held-upstream";

const stops: Stops = [];
const heldUpstream = () => startUpstream(stops);
const frontDoor = async (upstreamPort: number, admission: Parameters<typeof startDoor>[2]) =>
  (await startDoor(stops, upstreamPort, admission)).port;
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});

const head = (s: string) => requestHead(Buffer.from(s));

describe("which requests wait their turn", () => {
  it("reads the request line and headers of a chunk that starts a request, and nothing else", () => {
    expect(head("GET /api/v1/pods HTTP/1.1\r\nHost: x\r\n\r\n")).toEqual({
      method: "GET",
      target: "/api/v1/pods",
      version: "1.1",
      headers: "host: x",
      rawHeaders: "Host: x",
    });
    expect(head("GET /a HTTP/1.0\r\n\r\n")?.version).toBe("1.0");
    expect(head('{"kind":"Pod"}')).toBeUndefined(); // a body chunk
    expect(head("GET /a HTTP/1.1\r\nHost: x\r\n")?.target).toBe("/a"); // head split across chunks
  });

  it("lets watches, follows, upgrades and proxies by; holds everything else", () => {
    const long = (line: string, headers = "") =>
      longRunning(head(`${line} HTTP/1.1\r\nHost: x\r\n${headers}\r\n`)!);
    expect(long("GET /api/v1/namespaces/a/pods?watch=true&resourceVersion=5")).toBe(true);
    expect(long("GET /api/v1/pods?resourceVersion=5&watch=1")).toBe(true);
    expect(long("GET /api/v1/watch/namespaces/a/pods")).toBe(true);
    expect(long("GET /api/v1/namespaces/a/pods/p/log?follow=true&container=c")).toBe(true);
    expect(long("POST /api/v1/namespaces/a/pods/p/exec?command=sh")).toBe(true);
    expect(long("GET /api/v1/namespaces/a/pods/p/portforward")).toBe(true);
    expect(long("GET /api/v1/namespaces/a/services/s/proxy/healthz")).toBe(true);
    expect(long("GET /node/connect", "Upgrade: websocket\r\nConnection: Upgrade\r\n")).toBe(true);
    expect(long("POST /api/v1/namespaces/a/pods")).toBe(false);
    expect(long("GET /api/v1/pods?watch=false")).toBe(false);
    expect(long("GET /api/v1/namespaces/a/pods/p/log")).toBe(false);
    expect(long("GET /api/v1/namespaces/watch/pods/p")).toBe(false); // a namespace named watch
    expect(long("GET /healthz")).toBe(false);
  });
});

describe("the queue", () => {
  it("admits `limit` at a time, then in arrival order as places are given back", () => {
    const q = admissionQueue({ limit: 2, holdMs: 60_000 });
    const admitted: number[] = [];
    const leave = [0, 1, 2, 3, 4].map((i) => q.enter(() => admitted.push(i)));
    expect(admitted).toEqual([0, 1]);
    leave[2]!(); // gave up while waiting: never admitted, takes no place
    leave[1]!();
    expect(admitted).toEqual([0, 1, 3]);
    leave[1]!(); // twice is once
    expect(q.stats()).toEqual({ running: 2, waiting: 1 });
    leave[0]!();
    expect(admitted).toEqual([0, 1, 3, 4]);
  });

  it("holds 24 in workerd unless EDGEPLANE_ADMIT_LIMIT says otherwise", () => {
    const q = admissionQueue({ holdMs: 60_000 });
    for (let i = 0; i < 30; i++) q.enter(() => {});
    // the default when the variable is unset, as in this test's environment
    if (process.env.EDGEPLANE_ADMIT_LIMIT === undefined)
      expect(q.stats()).toEqual({ running: 24, waiting: 6 });
    expect([
      admitLimit(undefined),
      admitLimit(""),
      admitLimit("8"),
      admitLimit("0"),
      admitLimit("2.5"),
    ]).toEqual([24, 24, 8, 24, 24]);
  });

  it("admits clients in turn, each client's requests in arrival order", () => {
    const q = admissionQueue({ limit: 1, holdMs: 60_000 });
    const admitted: string[] = [];
    const leave = new Map<string, () => void>();
    for (const [id, flow] of [
      ["a1", "a"],
      ["a2", "a"],
      ["a3", "a"],
      ["a4", "a"],
      ["b1", "b"],
      ["c1", "c"],
      ["c2", "c"],
    ])
      leave.set(
        id,
        q.enter(() => admitted.push(id), flow),
      );
    leave.get("c2")!(); // a client's last waiting request gone: the client leaves the turns
    leave.get("a3")!();
    for (const id of ["a1", "a2", "b1", "c1", "a4"]) {
      expect(admitted.at(-1)).toBe(id);
      leave.get(id)!();
    }
    expect(admitted).toEqual(["a1", "a2", "b1", "c1", "a4"]);
    expect(q.stats()).toEqual({ running: 0, waiting: 0 });
  });

  it("admits clusters in turn, then each cluster's clients in turn", () => {
    const q = admissionQueue({ limit: 1, holdMs: 60_000 });
    const admitted: string[] = [];
    const leave = new Map<string, () => void>();
    // cluster a has three clients with two requests each; b one client; the root one
    for (const [id, flow, cluster] of [
      ["a-x1", "x", "a"],
      ["a-x2", "x", "a"],
      ["a-y1", "y", "a"],
      ["a-y2", "y", "a"],
      ["a-z1", "z", "a"],
      ["a-z2", "z", "a"],
      ["b-x1", "x", "b"],
      ["b-x2", "x", "b"],
      ["r-x1", "x", ""],
    ])
      leave.set(
        id,
        q.enter(() => admitted.push(id), flow, "workload", cluster),
      );
    leave.get("b-x2")!(); // b's last waiting request gone: b leaves the turns
    for (;;) {
      const last = admitted.at(-1)!;
      const before = admitted.length;
      leave.get(last)!();
      if (admitted.length === before) break;
    }
    // a's first went straight in and a waited first again; then b and the root each get a turn
    // before a's second client does (by clients alone, b and the root would wait behind y and z)
    expect(admitted).toEqual(["a-x1", "a-x2", "b-x1", "r-x1", "a-y1", "a-z1", "a-y2", "a-z2"]);
    expect(q.stats()).toEqual({ running: 0, waiting: 0 });
  });

  it("tells clients apart by verified credential, else by source address", () => {
    const h = head("GET /a HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer abc\r\n\r\n")!;
    expect(credentialOf(h)).toBe("Bearer abc");
    expect(credentialOf(head("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")!)).toBeUndefined();
    const known = new CredentialLevels();
    // a credential not yet answered for: waits with its address's other unverified requests, and asks
    expect(classify("/api/v1/pods", "bearer abc", "10.0.0.1", known)).toEqual({
      level: "catch-all",
      flow: "source 10.0.0.1",
      ask: true,
      cluster: "",
    });
    expect(classify("/api/v1/pods", undefined, "10.0.0.1", known)).toEqual({
      level: "catch-all",
      flow: "source 10.0.0.1",
      ask: false,
      cluster: "",
    });
    known.learn("bearer abc", "workload");
    known.learn("bearer node", "system");
    known.learn("bearer odd", "exempt"); // not a level of ours: not learned
    expect(classify("/api/v1/pods", "bearer abc", "10.0.0.1", known)).toEqual({
      level: "workload",
      flow: "credential bearer abc",
      ask: false,
      cluster: "",
    });
    expect(classify("/clusters/team-a/api/v1/pods?limit=5", "bearer abc", "h", known).cluster).toBe("team-a");
    expect(classify("/apis/coordination.k8s.io/v1/x", "bearer node", "h", known).level).toBe("system");
    expect(classify("/api/v1/pods", "bearer odd", "h", known).ask).toBe(true);
    for (const probe of ["/readyz", "/livez?verbose", "/healthz/etcd", "/clusters/c1/readyz"])
      expect([probe, classify(probe, undefined, "h", known).level]).toEqual([probe, "probes"]);
    expect(classify("/readyzz", undefined, "h", known).level).toBe("catch-all");
    // a credential that stopped authenticating waits as unverified again
    known.forget("bearer abc");
    expect(classify("/api/v1/pods", "bearer abc", "10.0.0.1", known).level).toBe("catch-all");
  });

  it("remembers at most `max` credentials, forgetting the one learned first", () => {
    const known = new CredentialLevels(2);
    known.learn("a", "workload");
    known.learn("b", "workload");
    known.learn("c", "system");
    expect([known.get("a"), known.get("b"), known.get("c"), known.size]).toEqual([
      undefined,
      "workload",
      "system",
      2,
    ]);
  });

  it("system and probes have seats beyond the limit; catch-all holds at most its few", () => {
    const q = admissionQueue({ limit: 4, holdMs: 60_000, systemSeats: 2, probeSeats: 1, catchAllSeats: 2 });
    const admitted: string[] = [];
    const leave = new Map<string, () => void>();
    const enter = (id: string, flow: string, level: Parameters<typeof q.enter>[2]) =>
      leave.set(
        id,
        q.enter(() => admitted.push(id), flow, level),
      );
    // a crowd without credentials: two go in, the rest wait however many seats are free
    for (const id of ["c1", "c2", "c3", "c4"]) enter(id, "source h", "catch-all");
    expect(admitted).toEqual(["c1", "c2"]);
    // verified clients fill the rest of the limit
    for (const id of ["w1", "w2", "w3"]) enter(id, `credential ${id}`, "workload");
    expect(admitted).toEqual(["c1", "c2", "w1", "w2"]);
    // a node's lease renewal and a probe go in at once, the limit reached or not
    enter("n1", "credential node", "system");
    enter("p1", "source h", "probes");
    expect(admitted.slice(4)).toEqual(["n1", "p1"]);
    expect(q.stats("system")).toEqual({ running: 1, waiting: 0 });
    expect(q.stats()).toEqual({ running: 6, waiting: 3 });
    // a seat given back: the shared levels take turns (workload went in last)
    leave.get("c1")!();
    expect(admitted.at(-1)).toBe("c3");
    leave.get("w1")!();
    expect(admitted.at(-1)).toBe("w3");
    // system is bounded by its own seats
    enter("n2", "credential node", "system");
    enter("n3", "credential node2", "system");
    expect(admitted.at(-1)).toBe("n2");
    leave.get("n1")!();
    expect(admitted.at(-1)).toBe("n3");
  });

  it("takes the place back from a request that holds it past holdMs", async () => {
    const q = admissionQueue({ limit: 1, holdMs: 50 });
    const admitted: number[] = [];
    q.enter(() => admitted.push(0));
    q.enter(() => admitted.push(1));
    expect(admitted).toEqual([0]);
    await new Promise((r) => setTimeout(r, 120));
    expect(admitted).toEqual([0, 1]);
  });
});

describe("through the front door", () => {
  it("keeps one request in the upstream at a time, in arrival order; a watch goes straight in", async () => {
    const up = await heldUpstream();
    const port = await frontDoor(up.port, { limit: 1, holdMs: 60_000 });
    const answers: Promise<string>[] = [];
    for (const id of ["a", "b", "c"]) {
      answers.push(get(port, `/api/v1/pods?id=${id}`));
      await new Promise((r) => setTimeout(r, 50)); // a known arrival order
    }
    await until(() => up.arrived.length === 1);
    const watch = get(port, "/api/v1/pods?watch=1&id=w");
    await until(() => up.arrived.includes("w"));
    expect(up.arrived).toEqual(["a", "w"]);
    for (const id of ["a", "b", "c"]) {
      await until(() => up.arrived.includes(id));
      expect(up.inFlight()).toBe(2); // this one and the watch
      up.answer(id);
    }
    expect(await Promise.all(answers)).toEqual(["ok", "ok", "ok"]);
    expect(up.arrived).toEqual(["a", "w", "b", "c"]);
    up.answer("w");
    expect(await watch).toBe("ok");
  });

  it("lets another client in between one client's requests", async () => {
    const up = await heldUpstream();
    const port = await frontDoor(up.port, { limit: 1, holdMs: 60_000 });
    await learn(up, port, ["x", "y"]);
    // x sends three at once (each on a connection of its own), then y one
    const ask = (id: string, token: string) => () => get(port, `/api/v1/pods?id=${id}`, token);
    const answers = await oneByOne([ask("x1", "x"), ask("x2", "x"), ask("x3", "x"), ask("y1", "y")]);
    await answerInOrder(up, ["x1", "x2", "y1", "x3"]);
    expect(await Promise.all(answers)).toEqual(["ok", "ok", "ok", "ok"]);
    expect(up.arrived.slice(2)).toEqual(["x1", "x2", "y1", "x3"]);
  });

  it("takes an HTTP/2 connection's requests as its credential's", async () => {
    const up = await heldUpstream();
    const port = await frontDoor(up.port, { limit: 1, holdMs: 60_000 });
    await learn(up, port, ["a", "b"]);
    const connect = (token: string) => {
      const session = http2.connect(`http://127.0.0.1:${port}`);
      stops.push(() => session.destroy());
      return (id: string) =>
        new Promise<string>((resolve, reject) => {
          const req = session.request({ ":path": `/api/v1/pods?id=${id}`, authorization: `Bearer ${token}` });
          let body = "";
          req.setEncoding("utf8");
          req.on("data", (d) => (body += d));
          req.on("end", () => resolve(body));
          req.on("error", reject);
        });
    };
    const [a, b] = [connect("a"), connect("b")];
    const answers = await oneByOne([() => a("a1"), () => a("a2"), () => a("a3"), () => b("b1")]);
    await answerInOrder(up, ["a1", "a2", "b1", "a3"]);
    expect(await Promise.all(answers)).toEqual(["ok", "ok", "ok", "ok"]);
    expect(up.arrived.slice(2)).toEqual(["a1", "a2", "b1", "a3"]);
  });

  it("gives a HEAD request's place back when its answer (a length, no body) arrives", async () => {
    const up = await heldUpstream();
    const port = await frontDoor(up.port, { limit: 1, holdMs: 60_000 });
    const head = new Promise<number>((resolve, reject) => {
      // kept alive: a closed connection would give the place back anyway
      const agent = new http.Agent({ keepAlive: true });
      stops.push(() => agent.destroy());
      const req = http.request({ port, host: "127.0.0.1", path: "/x?id=head", method: "HEAD", agent });
      req
        .on("response", (res) => resolve(res.statusCode!))
        .on("error", reject)
        .end();
    });
    await until(() => up.arrived.length === 1);
    const next = get(port, "/x?id=next");
    up.answer("head");
    expect(await head).toBe(200);
    await until(() => up.arrived.includes("next"), 1000);
    up.answer("next");
    expect(await next).toBe("ok");
  });

  it("forgets a request whose client went away while it waited", async () => {
    const up = await heldUpstream();
    const port = await frontDoor(up.port, { limit: 1, holdMs: 60_000 });
    const first = get(port, "/x?id=first");
    await until(() => up.arrived.length === 1);
    const gone = net.connect(port, "127.0.0.1");
    await new Promise((r) => gone.once("connect", r));
    gone.write("GET /x?id=gone HTTP/1.1\r\nHost: x\r\n\r\n");
    await new Promise((r) => setTimeout(r, 100));
    gone.destroy();
    const last = get(port, "/x?id=last");
    await new Promise((r) => setTimeout(r, 100));
    up.answer("first");
    await until(() => up.arrived.includes("last"));
    expect(up.arrived).toEqual(["first", "last"]);
    up.answer("last");
    expect(await Promise.all([first, last])).toEqual(["ok", "ok"]);
  });

  it("lets the next request in when one holds its place past holdMs", async () => {
    const up = await heldUpstream();
    const port = await frontDoor(up.port, { limit: 1, holdMs: 200 });
    void get(port, "/slow?id=slow").catch(() => {});
    await until(() => up.arrived.length === 1);
    const t0 = Date.now();
    const next = get(port, "/next?id=next");
    await until(() => up.arrived.includes("next"));
    expect(Date.now() - t0).toBeGreaterThanOrEqual(100);
    up.answer("next");
    expect(await next).toBe("ok");
  });
});
