// The agent's side of each tunnelled stream: logs from the CRI log file, exec/attach through
// CRI (ExecSync, or the runtime's streaming server: remotecommand v4 over SPDY), and
// port-forward by piping kubectl's SPDY byte stream into the runtime's port-forward server.
import http from "node:http";
import type { Duplex } from "node:stream";
import type {
  AttachRequest,
  ExecRequest,
  LogsRequest,
  PortForwardRequest,
  WireStatus,
} from "../../api/wire/node-tunnel";
import { failure } from "../../api/wire/node-tunnel";
import { carriedStreamProtocol } from "../../api/wire/spdy-upgrade";
import type { CriClient } from "../cri/client";
import {
  CLOSE,
  channelFrame,
  ERROR,
  errorStatus,
  exitStatus,
  RESIZE,
  STDERR,
  STDIN,
  STDOUT,
} from "./channels";
import { streamLogFile } from "./cri-log";
import { SpdyClient, type SpdyStream } from "./spdy";

/** Where containers are (edgelet's Edgelet object satisfies this). */
export interface TunnelLookup {
  locate(
    namespace: string,
    pod: string,
    container: string,
    previous?: boolean,
  ): ContainerLike | undefined | Promise<ContainerLike | undefined>;
  locateSandbox(
    namespace: string,
    pod: string,
  ):
    | { sandboxId: string; podIP?: string }
    | undefined
    | Promise<{ sandboxId: string; podIP?: string } | undefined>;
}

export interface ContainerLike {
  containerId: string;
  logPath: string;
  running: boolean;
}

/** What a handler may do with its stream. */
export interface StreamIO {
  /** sends one DATA frame toward the apiserver */
  send(data: Uint8Array): void;
  /** ends the stream (a CLOSE frame), with an error text for failures after the reply */
  close(error?: string): void;
  signal: AbortSignal;
}

/** A running stream: it receives the client's messages and the end of the stream. */
export interface StreamHandler {
  data(payload: Buffer): void;
  end(): void;
}

export class OpenError extends Error {
  constructor(readonly status: WireStatus) {
    super(status.message);
  }
}

const badRequest = (msg: string) => new OpenError(failure(400, "BadRequest", msg));
const notFound = (msg: string) => new OpenError(failure(404, "NotFound", msg));

async function container(
  lookup: TunnelLookup,
  r: { namespace: string; pod: string; container: string },
  previous = false,
) {
  const c = await lookup.locate(r.namespace, r.pod, r.container, previous);
  if (c) return c;
  if (previous)
    throw badRequest(`previous terminated container "${r.container}" in pod "${r.pod}" not found`);
  throw badRequest(`container "${r.container}" in pod "${r.pod}" is waiting to start: ContainerCreating`);
}

/** Validates and starts a logs stream; resolves once it may be acknowledged. */
export async function openLogs(r: LogsRequest, lookup: TunnelLookup, cri: CriClient, io: StreamIO) {
  const c = await container(lookup, r, !!r.previous);
  if (!c.logPath) throw badRequest(`container "${r.container}" in pod "${r.pod}" has no log file`);
  return () => {
    const running = async () => {
      const st = await cri.containerStatus(c.containerId);
      return st.status?.state === "CONTAINER_RUNNING";
    };
    streamLogFile(c.logPath, r, (chunk) => io.send(chunk), { running, signal: io.signal }).then(
      () => io.close(),
      (e) => io.close(String((e as Error).message ?? e)),
    );
  };
}

/** An HTTP upgrade to SPDY/3.1 on the runtime's streaming server, with a stream protocol. */
function upgradeSpdy(url: string, protocol: string, io: StreamIO): Promise<Duplex> {
  return new Promise<Duplex>((resolve, reject) => {
    const req = http.request(url, {
      method: "POST",
      headers: { connection: "Upgrade", upgrade: "SPDY/3.1", "x-stream-protocol-version": protocol },
    });
    req.on("upgrade", (_res, sock, head) => {
      if (head.length) sock.unshift(head);
      resolve(sock);
    });
    req.on("response", (res) => {
      res.resume();
      reject(
        new OpenError(
          failure(500, "InternalError", `streaming server refused the upgrade: HTTP ${res.statusCode}`),
        ),
      );
    });
    req.on("error", (e) =>
      reject(new OpenError(failure(500, "InternalError", `streaming server: ${e.message}`))),
    );
    io.signal.addEventListener("abort", () => req.destroy());
    req.end();
  });
}

/**
 * Pipes a client's SPDY byte stream (carried in the stream's DATA frames) to the runtime's
 * streaming server upgraded with `protocol`, and its answer back: the SPDY session runs end to
 * end between the client and the runtime.
 */
async function pipeSpdy(url: string, protocol: string, io: StreamIO): Promise<StreamHandler> {
  const socket = await upgradeSpdy(url, protocol, io);
  socket.on("data", (b: Buffer) => io.send(b));
  socket.on("close", () => io.close());
  socket.on("error", (e) => io.close(e.message));
  io.signal.addEventListener("abort", () => socket.destroy());
  return {
    data(payload) {
      socket.write(payload);
    },
    end() {
      socket.destroy();
    },
  };
}

/**
 * Bridges the client's channel frames (v5/v4 over WebSocket) to the runtime's streaming
 * server speaking remotecommand v4.channel.k8s.io over SPDY, one SPDY stream per channel.
 */
async function bridgeRemoteCommand(
  url: string,
  opts: { stdin: boolean; stdout: boolean; stderr: boolean; tty: boolean },
  io: StreamIO,
): Promise<StreamHandler> {
  const socket = await upgradeSpdy(url, "v4.channel.k8s.io", io);
  const session = new SpdyClient(socket, () => io.close());
  const ignore = { data() {}, fin() {} };
  const into = (channel: number) => ({ data: (b: Buffer) => io.send(channelFrame(channel, b)), fin() {} });
  // the order the kubelet's client uses: error first, then the standard streams, then resize
  session.open({ streamtype: "error" }, into(ERROR));
  const stdin = opts.stdin ? session.open({ streamtype: "stdin" }, ignore) : undefined;
  if (opts.stdout) session.open({ streamtype: "stdout" }, into(STDOUT));
  if (opts.stderr && !opts.tty) session.open({ streamtype: "stderr" }, into(STDERR));
  const resize = opts.tty ? session.open({ streamtype: "resize" }, ignore) : undefined;
  io.signal.addEventListener("abort", () => session.close());
  return {
    data(payload) {
      if (!payload.length) return;
      const body = payload.subarray(1);
      switch (payload[0]) {
        case STDIN:
          if (body.length) stdin?.write(body);
          return;
        case RESIZE:
          resize?.write(body);
          return;
        case CLOSE:
          if (body[0] === STDIN) stdin?.end();
          return;
      }
    },
    end() {
      session.close();
    },
  };
}

export async function openExec(
  r: ExecRequest,
  lookup: TunnelLookup,
  cri: CriClient,
  io: StreamIO,
): Promise<StreamHandler> {
  const c = await container(lookup, r);
  if (!c.running) throw badRequest(`container ${r.container} is not running`);
  const carried = carriedStreamProtocol(r.protocol);
  if (!carried && !r.stdin && !r.tty) {
    // nothing to send in: run to completion and report
    const ignore: StreamHandler = { data() {}, end() {} };
    cri.execSync(c.containerId, r.command, 0, { timeoutMs: 24 * 3600_000 }).then(
      (res) => {
        if (r.stdout && res.stdout.length) io.send(channelFrame(STDOUT, res.stdout));
        if (r.stderr && res.stderr.length) io.send(channelFrame(STDERR, res.stderr));
        io.send(channelFrame(ERROR, JSON.stringify(exitStatus(res.exit_code, r.command))));
        io.close();
      },
      (e) => {
        io.send(channelFrame(ERROR, JSON.stringify(errorStatus((e as Error).message))));
        io.close();
      },
    );
    return ignore;
  }
  const { url } = await cri.exec({
    container_id: c.containerId,
    cmd: r.command,
    tty: r.tty,
    stdin: r.stdin,
    stdout: r.stdout,
    stderr: r.stderr,
  });
  return carried ? pipeSpdy(url, carried, io) : bridgeRemoteCommand(url, r, io);
}

export async function openAttach(
  r: AttachRequest,
  lookup: TunnelLookup,
  cri: CriClient,
  io: StreamIO,
): Promise<StreamHandler> {
  const c = await container(lookup, r);
  if (!c.running) throw badRequest(`container ${r.container} is not running`);
  const { url } = await cri.attach({
    container_id: c.containerId,
    stdin: r.stdin,
    tty: r.tty,
    stdout: r.stdout,
    stderr: r.stderr,
  });
  const carried = carriedStreamProtocol(r.protocol);
  return carried ? pipeSpdy(url, carried, io) : bridgeRemoteCommand(url, r, io);
}

/**
 * The kubelet's port-forward over WebSocket channels (v4.channel.k8s.io): for the i-th port,
 * channel 2i carries its data both ways and channel 2i+1 its errors, and the first message of
 * each channel from here is the port (uint16, little-endian). Each port is one stream pair
 * (error, then data) of portforward.k8s.io on the runtime's SPDY server; the connection ends
 * when a port's connection in the pod does.
 */
async function bridgePortForwardChannels(url: string, ports: number[], io: StreamIO): Promise<StreamHandler> {
  const socket = await upgradeSpdy(url, "portforward.k8s.io", io);
  const session = new SpdyClient(socket, () => io.close());
  const data: SpdyStream[] = [];
  // the connection ends once every port's pair has (as the kubelet's does)
  let pairsDone = 0;
  const pairDone = () => {
    if (++pairsDone === ports.length) session.close();
  };
  ports.forEach((port, i) => {
    const prefix = Buffer.alloc(2);
    prefix.writeUInt16LE(port);
    io.send(channelFrame(2 * i, prefix));
    io.send(channelFrame(2 * i + 1, prefix));
    const headers = { port: String(port), requestid: String(i) };
    // the pair is done when both streams ended (an error, such as nothing listening on the
    // port, comes on the error stream as its data stream ends), or soon after its data did
    let ended = 0;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      pairDone();
    };
    const end = () => {
      if (++ended === 1) setTimeout(finish, 1000).unref();
      else finish();
    };
    session.open(
      { ...headers, streamtype: "error" },
      {
        data: (b) => io.send(channelFrame(2 * i + 1, b)),
        fin: end,
      },
    );
    const stream = session.open(
      { ...headers, streamtype: "data" },
      {
        data: (b) => io.send(channelFrame(2 * i, b)),
        fin: end,
      },
    );
    data.push(stream);
  });
  io.signal.addEventListener("abort", () => session.close());
  return {
    data(payload) {
      const channel = payload[0];
      // a client writes only to data channels; error channels are the server's
      if (payload.length > 1 && channel % 2 === 0) data[channel / 2]?.write(payload.subarray(1));
    },
    end() {
      session.close();
    },
  };
}

/**
 * kubectl's SPDY/3.1+portforward.k8s.io tunnels a SPDY/3.1 connection (portforward.k8s.io streams)
 * inside WebSocket messages, as the front door does for a plain SPDY upgrade
 * (api/wire/spdy-upgrade.ts). The runtime's streaming server speaks exactly that SPDY after an
 * HTTP upgrade, so the bytes are piped through untouched. Other clients speak the channel
 * protocol (bridgePortForwardChannels).
 */
export async function openPortForward(
  r: PortForwardRequest,
  lookup: TunnelLookup,
  cri: CriClient,
  io: StreamIO,
): Promise<StreamHandler> {
  const s = await lookup.locateSandbox(r.namespace, r.pod);
  if (!s) throw notFound(`pod "${r.pod}" has no running sandbox on this node`);
  const { url } = await cri.portForward(s.sandboxId, r.ports);
  if (r.protocol === "v4.channel.k8s.io") return bridgePortForwardChannels(url, r.ports, io);
  // tunnelled by kubectl 1.31+, or a plain upgrade carried by the front door (spdy-upgrade.ts)
  return pipeSpdy(url, "portforward.k8s.io", io);
}
