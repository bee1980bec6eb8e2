// The pure parts of pod flow traces: span cleaning and bounds, ordering, time format, the
// agent's sequential recorder, the shard's completion of a create's spans, the scheduler's
// attempt sampling, the bounds on container restarts' spans, and the CLI's waterfall.
import { describe, expect, it, vi } from "vitest";
import { PodTracer } from "../../agent/edgelet/trace";
import {
  cleanSpan,
  isRestartSpan,
  MAX_HEADER_SPANS,
  noteDroppedRestarts,
  orderSpans,
  parseSpans,
  rfc3339Nano,
  tracingEnabled,
} from "../../api/trace";
import { createRecordSpans, encodeCreateRecord, storedCreateRecord } from "../../api/trace-record";
import { renderWaterfall } from "../../cli/commands/trace";
import { recordsAttempt, schedulingSpan } from "../../durable-objects/scheduler/trace";
import { closeAt } from "../../durable-objects/store/traces";

describe("spans", () => {
  it("keeps only well-formed spans from a header, bounded, details cut when large", () => {
    expect(parseSpans("not json")).toEqual([]);
    expect(parseSpans('{"step":"6.1"}')).toEqual([]);
    const many = Array.from({ length: 100 }, (_, i) => ({
      step: "9.5",
      name: `s${i}`,
      component: "x",
      start: i,
    }));
    expect(parseSpans(JSON.stringify(many))).toHaveLength(MAX_HEADER_SPANS);
    expect(cleanSpan({ step: "../x", name: "n", start: 1 })).toBeUndefined();
    expect(cleanSpan({ step: "6.1", name: "n", start: 5, end: 2 })?.end).toBe(5);
    expect(
      cleanSpan({ step: "6.1", name: "n", start: 1, detail: { big: "x".repeat(5000) } })?.detail,
    ).toEqual({
      truncated: true,
    });
    expect(cleanSpan({ step: "6.1", name: "n", start: 1, state: "weird" })?.state).toBeUndefined();
  });

  it("orders by time, same-start ones by their end then FLOW.md's step, waiting ones last", () => {
    const out = orderSpans([
      { step: "9.2", name: "wait", component: "", start: 1 },
      { step: "4.1", name: "controller", component: "", start: 10, end: 20 },
      { step: "4.2", name: "chain", component: "", start: 10, end: 10 },
      { step: "2.1", name: "authn", component: "", start: 20, end: 21 },
      { step: "1.3", name: "request", component: "", start: 20, end: 20 },
    ]);
    expect(out.map((s) => s.step)).toEqual(["4.2", "4.1", "1.3", "2.1", "9.2"]);
  });

  it("formats RFC 3339 with nine fraction digits, microseconds kept", () => {
    expect(rfc3339Nano(Date.UTC(2026, 11, 5, 7, 0, 1, 234) + 0.5)).toBe("2026-12-05T07:00:01.234500000Z");
    expect(rfc3339Nano(Date.UTC(2026, 0, 1))).toBe("2026-01-01T00:00:00.000000000Z");
  });

  it("is on unless EDGEPLANE_TRACE says off", () => {
    expect(tracingEnabled({})).toBe(true);
    expect(tracingEnabled({ EDGEPLANE_TRACE: "off" })).toBe(false);
    expect(tracingEnabled({ EDGEPLANE_TRACE: "false" })).toBe(false);
    expect(tracingEnabled({ EDGEPLANE_TRACE: "on" })).toBe(true);
  });

  it("the shard closes a create's store step and places the initializers' mark at its end", () => {
    const record = encodeCreateRecord({
      verb: "create",
      userAgent: 'kubectl/v1.32 "quoted"',
      received: 1,
      authn: { end: 2, method: "bearer token", user: "admin", groups: ["system:masters"] },
      cause: { controller: "replicaset-controller", owner: { kind: "ReplicaSet", name: "rs" }, since: 0.5 },
      authz: { start: 2, end: 3, decision: "allow", authorizer: "RBAC", reason: "binding x" },
      admission: {
        start: 3,
        end: 4,
        mutatedBy: ["Initializers"],
        ran: 9,
        initializersRan: true,
        initializersMutated: true,
      },
      storeStart: 4,
    });
    const spans = createRecordSpans(storedCreateRecord(record, 42, 9));
    expect(spans.map((s) => [s.step, s.name, s.component, s.start, s.end])).toEqual([
      ["1.3", "request received", "apiserver", 1, 1],
      ["2.1", "authentication", "apiserver", 1, 2],
      ["4.1", "controller", "replicaset-controller", 0.5, 1],
      ["2.2", "authorization", "apiserver", 2, 3],
      ["2.3", "admission", "apiserver", 3, 4],
      ["2.4", "stored", "store", 4, 9],
      ["3.1", "initializers", "apiserver", 9, 9],
    ]);
    expect(spans[0]!.detail).toEqual({ verb: "create", userAgent: 'kubectl/v1.32 "quoted"' });
    expect(spans[1]!.detail).toEqual({ method: "bearer token", user: "admin", groups: ["system:masters"] });
    expect(spans[2]!.detail).toMatchObject({ reactionMs: 0.5, owner: { kind: "ReplicaSet", name: "rs" } });
    expect(spans[3]!.detail).toEqual({ decision: "allow", authorizer: "RBAC", reason: "binding x" });
    expect(spans[4]!.detail).toEqual({ mutatedBy: ["Initializers"], ran: 9 });
    expect(spans[5]!.detail).toEqual({ resourceVersion: "42" });
    expect(spans[6]!.detail).toEqual({ ran: true, mutated: true });
    // bounded: a huge user agent is cut; a malformed or missing record is no spans
    const big = encodeCreateRecord({
      verb: "create",
      userAgent: "x".repeat(100_000),
      received: 1,
      storeStart: 2,
    });
    expect(big.length).toBeLessThan(1000);
    expect(createRecordSpans(storedCreateRecord(big, 1, 3)).map((s) => s.step)).toEqual([
      "1.3",
      "2.4",
      "3.1",
    ]);
    // system:masters' own reason is not stored, and read back the same
    const reason = "member of system:masters: always allowed";
    const masters = encodeCreateRecord({
      verb: "create",
      userAgent: "",
      received: 1,
      authz: { start: 1, end: 1, decision: "allow", authorizer: "system:masters", reason },
      storeStart: 2,
    });
    expect(masters).not.toContain(reason);
    expect(createRecordSpans(storedCreateRecord(masters, 1, 3))[1]!.detail).toEqual({
      decision: "allow",
      authorizer: "system:masters",
      reason,
    });
    const groups = Array.from({ length: 500 }, (_, i) => `group-${i}`);
    const many = encodeCreateRecord({
      verb: "create",
      userAgent: "",
      received: 1,
      authn: { end: 1, method: "x509 client certificate", user: "u", groups },
      storeStart: 2,
    });
    const kept = createRecordSpans(storedCreateRecord(many, 1, 3))[1]!.detail!.groups as string[];
    expect(kept.length).toBeGreaterThan(10);
    expect(JSON.stringify(kept).length).toBeLessThan(2048);
    expect(createRecordSpans("[1,2,{")).toEqual([]);
    expect(createRecordSpans(null)).toEqual([]);
    const closed = closeAt(
      [
        { step: "5.2", name: "binding", component: "apiserver", start: 5 },
        { step: "5.3", name: "bound", component: "apiserver", start: 0 },
      ],
      7,
    );
    expect(closed.map((s) => [s.start, s.end])).toEqual([
      [5, 7],
      [7, 7],
    ]);
  });
});

describe("the agent's recorder", () => {
  it("records stages one after the other, failures once per reason, nothing after Ready", () => {
    vi.useFakeTimers({ now: 1000 });
    try {
      const t = new PodTracer(1000);
      t.mark("6.1", "picked up");
      vi.advanceTimersByTime(5);
      t.stage("6.3", "node admission");
      vi.advanceTimersByTime(10);
      t.failed("9.2", "image pull c", "ErrImagePull: 401");
      vi.advanceTimersByTime(10);
      t.failed("9.2", "image pull c", "ErrImagePull: 401 again");
      t.failed("9.2", "image pull c", "ImagePullBackOff: back-off");
      t.first("9.2 c", "9.2", "image pull c");
      t.first("9.2 c", "9.2", "image pull c");
      t.stage("6.2", "ready");
      t.finished = true;
      t.stage("9.5", "start c");
      const spans = t.take();
      expect(spans.map((s) => `${s.step} ${s.state ?? "done"}`)).toEqual([
        "6.1 done",
        "6.3 done",
        "9.2 failed",
        "9.2 failed",
        "9.2 done",
        "6.2 done",
      ]);
      for (let i = 1; i < spans.length; i++) expect(spans[i].start).toBeGreaterThanOrEqual(spans[i - 1].end!);
      expect(spans[1]).toMatchObject({ start: 1000, end: 1005 });
      expect(t.take()).toEqual([]);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("container restarts in the trace", () => {
  it("the agent records each restart after Ready, from the previous run's end, never before the last stage", () => {
    vi.useFakeTimers({ now: 1000 });
    try {
      const t = new PodTracer(1000);
      vi.advanceTimersByTime(10);
      t.stage("9.5", "start c");
      t.stage("6.2", "ready");
      t.finished = true;
      vi.advanceTimersByTime(500);
      // exited at 1200, started again now (1510)
      t.restart("c", 1, 1200, { cause: "exited", exitCode: 1, backOffMs: 0 });
      vi.advanceTimersByTime(100);
      // a previous end before the last stage recorded starts at that stage's end
      t.restart("c", 2, 900, { cause: "liveness probe failed", exitCode: 137, backOffMs: 10_000 });
      const spans = t.take();
      expect(spans.map((x) => x.name)).toEqual([
        "start c",
        "ready",
        "start c (restart 1)",
        "start c (restart 2)",
      ]);
      expect(spans[2]).toMatchObject({
        step: "9.3",
        component: "edgelet",
        start: 1200,
        end: 1510,
        detail: { container: "c", restart: 1, exitCode: 1 },
      });
      expect(spans[3]).toMatchObject({ start: 1510, end: 1610 });
      expect(spans.filter(isRestartSpan)).toHaveLength(2);
      expect(isRestartSpan(spans[0])).toBe(false);
    } finally {
      vi.useRealTimers();
    }
  });

  it("a pod running before the agent saw it: restarts only, no first-start stages", () => {
    const t = new PodTracer(Date.now(), true);
    t.mark("6.1", "picked up");
    t.stage("7.1", "sandbox");
    t.restart("c", 4, undefined, { cause: "exited" });
    expect(t.take().map((x) => x.name)).toEqual(["start c (restart 4)"]);
  });

  it("restarts not sent are bounded, the newest kept, and the read counts the earlier ones per container", () => {
    const t = new PodTracer(Date.now(), true);
    for (let n = 1; n <= 70; n++) t.restart("c", n, undefined, {});
    t.restart("side", 3, undefined, {});
    const spans = t.take();
    expect(spans.length).toBeLessThanOrEqual(64);
    const restarts = spans.filter((x) => x.detail?.container === "c").map((x) => x.detail?.restart);
    expect(restarts[restarts.length - 1]).toBe(70);
    expect(restarts).toEqual(restarts.map((_, i) => 70 - restarts.length + 1 + i));
    const noted = noteDroppedRestarts(spans);
    const firstC = noted.find((x) => x.detail?.container === "c")!;
    expect(firstC.detail?.earlierRestartsDropped).toBe((firstC.detail?.restart as number) - 1);
    expect(noted.find((x) => x.detail?.container === "side")!.detail?.earlierRestartsDropped).toBe(2);
    expect(noted.filter((x) => x.detail?.earlierRestartsDropped !== undefined)).toHaveLength(2);
    // the spans given are left as they were
    expect(spans.some((x) => x.detail?.earlierRestartsDropped !== undefined)).toBe(false);
    // a first restart kept says nothing
    const one = noteDroppedRestarts([{ ...spans[0], detail: { container: "c", restart: 1 } }]);
    expect(one[0].detail?.earlierRestartsDropped).toBeUndefined();
  });
});

describe("the scheduler's spans", () => {
  it("keeps failed attempts 1, 2, 4, 8 ... only", () => {
    expect([1, 2, 3, 4, 5, 8, 9, 16].filter(recordsAttempt)).toEqual([1, 2, 4, 8, 16]);
    expect(recordsAttempt(0)).toBe(false);
  });

  it("says where the pod went, or why it waits", () => {
    const ok = schedulingSpan({ queuedAt: 1, decidedAt: 3, attempts: 1, node: "n1", score: 200 });
    expect(ok).toMatchObject({
      step: "5.1",
      start: 1,
      end: 3,
      detail: { node: "n1", score: 200, queuedMs: 2 },
    });
    expect(ok.state).toBeUndefined();
    const wait = schedulingSpan({
      queuedAt: 1,
      decidedAt: 2,
      attempts: 2,
      message: "0/1 nodes are available: 1 Insufficient cpu.",
      filtered: { NodeResourcesFit: { nodes: ["n1"], reasons: ["Insufficient cpu"] } },
    });
    expect(wait).toMatchObject({
      state: "waiting",
      reason: "Unschedulable: 0/1 nodes are available: 1 Insufficient cpu.",
    });
  });
});

describe("the CLI's waterfall", () => {
  it("draws one line per stage, marks the slowest and shows a failure's reason", () => {
    const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms).toISOString();
    const text = renderWaterfall({
      pod: { name: "p", namespace: "ns", uid: "u", phase: "Pending", nodeName: "n1" },
      stages: [
        {
          step: "2.1",
          name: "authentication",
          component: "apiserver",
          start: at(0),
          end: at(1),
          durationMs: 1,
          state: "done",
        },
        {
          step: "7.1",
          name: "sandbox",
          component: "edgelet",
          start: at(1),
          end: at(300),
          durationMs: 299,
          state: "done",
        },
        {
          step: "9.2",
          name: "image pull c",
          component: "edgelet",
          start: at(300),
          end: at(400),
          durationMs: 100,
          state: "failed",
          reason: "ErrImagePull: 401 from 127.0.0.1:5001",
        },
      ],
    });
    const lines = text.trim().split("\n");
    expect(lines[0]).toContain("pod ns/p");
    expect(lines.find((l) => l.startsWith("7.1 sandbox"))).toMatch(/█+.*◀ slowest/);
    expect(lines.find((l) => l.startsWith("9.2 image pull c"))).toMatch(
      /✗+\|\s+failed: ErrImagePull: 401 from 127\.0\.0\.1:5001/,
    );
    expect(text).toContain("slowest: 7.1 sandbox (299ms)");
    // bars are placed by time: the sandbox starts near the left, the pull near the right
    const bar = (l: string) => l.slice(l.indexOf("|") + 1, l.lastIndexOf("|"));
    const sandbox = bar(lines.find((l) => l.startsWith("7.1"))!);
    const pull = bar(lines.find((l) => l.startsWith("9.2"))!);
    expect(sandbox.indexOf("█")).toBeLessThan(pull.indexOf("✗"));
  });

  it("shows a restart's exit and back-off, never as the slowest stage, and how many restarts were dropped", () => {
    const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms).toISOString();
    const restart = (n: number, start: number, end: number, extra: Record<string, unknown> = {}) => ({
      step: "9.3",
      name: `start c (restart ${n})`,
      component: "edgelet",
      start: at(start),
      end: at(end),
      durationMs: end - start,
      state: "done" as const,
      detail: { container: "c", restart: n, cause: "exited", exitCode: 1, reason: "Error", ...extra },
    });
    const text = renderWaterfall({
      pod: { name: "p", namespace: "ns", uid: "u", phase: "Running" },
      stages: [
        {
          step: "9.5",
          name: "start c",
          component: "edgelet",
          start: at(0),
          end: at(50),
          durationMs: 50,
          state: "done",
          detail: {},
        },
        restart(4, 100, 20_100, { backOffMs: 20_000, earlierRestartsDropped: 3 }),
        restart(5, 20_200, 60_200, { backOffMs: 40_000 }),
      ],
    });
    expect(text).toMatch(
      /9\.3 start c \(restart 4\) .*\| {2}exit 1 \(Error\), back-off 20\.00s, 3 earlier restarts not kept/,
    );
    expect(text).toMatch(/9\.3 start c \(restart 5\) .*\| {2}exit 1 \(Error\), back-off 40\.00s$/m);
    expect(text).toContain("slowest: 9.5 start c (50ms)");
    expect(text).toContain("restarts: 2 in the trace, 3 earlier not kept (the trace keeps the newest)");
  });
});

describe("admission's change check", () => {
  it("tells a changed object from an unchanged one, managedFields aside", async () => {
    const { fingerprint } = await import("../../workers/trace/fingerprint");
    const pod = () => ({
      metadata: { name: "p", labels: { a: "b" }, managedFields: [{ manager: "kubectl" }] },
      spec: { containers: [{ name: "c", image: "busybox" }], priority: 0 },
    });
    const base = fingerprint(pod());
    expect(fingerprint(pod())).toBe(base);
    const changes: ((p: ReturnType<typeof pod>) => void)[] = [
      (p) => ((p.spec as any).serviceAccountName = "default"),
      (p) => (p.spec.priority = 1000),
      (p) => (p.metadata.labels.a = "c"),
      (p) => p.spec.containers.push({ name: "sidecar", image: "busybox" }),
      (p) => ((p.spec.containers[0] as any).resources = {}),
    ];
    for (const change of changes) {
      const p = pod();
      change(p);
      expect(fingerprint(p)).not.toBe(base);
    }
    const p = pod();
    p.metadata.managedFields.push({ manager: "other" });
    expect(fingerprint(p)).toBe(base);
    // the per-plugin probe sees what admission plugins write
    const { shapeProbe } = await import("../../workers/trace/fingerprint");
    const probe = shapeProbe(pod());
    expect(shapeProbe(pod())).toBe(probe);
    for (const change of changes) {
      const q = pod();
      change(q);
      expect(shapeProbe(q)).not.toBe(probe);
    }
    // what LimitRanger writes: a container's requests and limits
    const withRequests = () => {
      const q = pod();
      (q.spec.containers[0] as any).resources = { requests: { cpu: "100m" } };
      return q;
    };
    const requested = shapeProbe(withRequests());
    expect(shapeProbe(withRequests())).toBe(requested);
    const limited = withRequests();
    (limited.spec.containers[0] as any).resources.limits = { cpu: "1" };
    expect(shapeProbe(limited)).not.toBe(requested);
    const more = withRequests();
    (more.spec.containers[0] as any).resources.requests.memory = "64Mi";
    expect(shapeProbe(more)).not.toBe(requested);
  });
});
