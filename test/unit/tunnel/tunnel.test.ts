// The agent's tunnel against a fake NodeTunnel: a local WebSocket server speaking the frames.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type WebSocket, WebSocketServer } from "ws";
import type { CriClient } from "../../../agent/cri/client";
import { startTunnel, type Tunnel, tunnelUrl } from "../../../agent/tunnel/tunnel";
import {
  decodeFrame,
  FRAME_CLOSE,
  FRAME_DATA,
  FRAME_OPEN,
  FRAME_REPLY,
  type Frame,
  jsonFrame,
  payloadJson,
} from "../../../api/wire/node-tunnel";

describe("agent tunnel", () => {
  const dir = mkdtempSync(join(tmpdir(), "tunnel-unit-"));
  const logPath = join(dir, "0.log");
  let wss: WebSocketServer;
  let port = 0;
  const conns: { ws: WebSocket; req: IncomingMessage; frames: Frame[] }[] = [];
  let tunnel: Tunnel;

  beforeAll(async () => {
    writeFileSync(logPath, "2026-11-29T10:00:00Z stdout F hello\n2026-11-29T10:00:01Z stderr F world\n");
    wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
    await new Promise((r) => wss.once("listening", r));
    port = (wss.address() as { port: number }).port;
    wss.on("connection", (ws, req) => {
      const c = { ws, req, frames: [] as Frame[] };
      conns.push(c);
      ws.on("message", (m: Buffer, bin) => {
        if (!bin) return;
        const f = decodeFrame(new Uint8Array(m));
        if (f) c.frames.push({ ...f, payload: f.payload.slice() });
      });
    });
    const cri = {
      containerStatus: async () => ({ status: { state: "CONTAINER_EXITED" }, info: {} }),
    } as unknown as CriClient;
    tunnel = startTunnel({
      server: `http://127.0.0.1:${port}`,
      token: () => "node-token",
      nodeName: "node-a",
      cri,
      log: () => {},
      lookup: {
        locate: (ns, pod, c) =>
          ns === "default" && pod === "web" && c === "app"
            ? { containerId: "cid", logPath, running: false }
            : undefined,
        locateSandbox: () => undefined,
      },
    });
    await tunnel.connected();
  });

  afterAll(async () => {
    await tunnel.stop();
    await new Promise((r) => wss.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  async function until<T>(fn: () => T | undefined, ms = 5000): Promise<T> {
    const end = Date.now() + ms;
    for (;;) {
      const v = fn();
      if (v) return v;
      if (Date.now() > end) throw new Error("timed out");
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it("dials the node's tunnel path with its bearer token", () => {
    expect(conns[0].req.url).toBe("/edgeplane/tunnel/node-a");
    expect(conns[0].req.headers.authorization).toBe("Bearer node-token");
    expect(tunnelUrl("https://h:6443/base/", "n")).toBe("wss://h:6443/base/edgeplane/tunnel/n");
  });

  it("answers a logs OPEN with REPLY, the text, then CLOSE", async () => {
    const c = conns[conns.length - 1];
    c.ws.send(
      jsonFrame(FRAME_OPEN, 41, {
        kind: "logs",
        namespace: "default",
        pod: "web",
        container: "app",
        timestamps: true,
      }),
    );
    await until(() => c.frames.find((f) => f.stream === 41 && f.type === FRAME_CLOSE));
    const mine = c.frames.filter((f) => f.stream === 41);
    expect(mine[0].type).toBe(FRAME_REPLY);
    expect(payloadJson(mine[0])).toEqual({ ok: true });
    const text = mine
      .filter((f) => f.type === FRAME_DATA)
      .map((f) => Buffer.from(f.payload).toString())
      .join("");
    expect(text).toBe("2026-11-29T10:00:00Z hello\n2026-11-29T10:00:01Z world\n");
  });

  it("refuses an unknown container with a 400 Status and no data", async () => {
    const c = conns[conns.length - 1];
    c.ws.send(
      jsonFrame(FRAME_OPEN, 42, { kind: "logs", namespace: "default", pod: "web", container: "nope" }),
    );
    const reply = await until(() => c.frames.find((f) => f.stream === 42 && f.type === FRAME_REPLY));
    const r = payloadJson<any>(reply);
    expect(r.ok).toBe(false);
    expect(r.status.code).toBe(400);
    expect(r.status.message).toContain('container "nope" in pod "web"');
    await new Promise((r) => setTimeout(r, 100));
    expect(c.frames.filter((f) => f.stream === 42)).toHaveLength(1);
  });

  it("reconnects after the connection drops", async () => {
    const before = conns.length;
    conns[conns.length - 1].ws.terminate();
    await until(() => conns.length > before);
    await tunnel.connected();
    expect(tunnel.isConnected).toBe(true);
  });
});
