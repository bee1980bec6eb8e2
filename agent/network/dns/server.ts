// The node-local DNS server pods reach through the kube-dns Service: cluster names answered
// from ClusterDns, every other name forwarded to the node's own resolvers (the nameservers of
// its /etc/resolv.conf, as CoreDNS's `forward . /etc/resolv.conf`). UDP and TCP on one port.
import dgram from "node:dgram";
import { readFileSync } from "node:fs";
import net from "node:net";
import * as packet from "dns-packet";
import { type Answer, type ClusterDns, FORWARD } from "./records";

const RCODE_SERVFAIL = 2;
const RCODE_FORMERR = 1;

export interface DnsServerOptions {
  host: string;
  /** 0: any free port */
  port: number;
  records: ClusterDns;
  /** upstream resolvers; default: the nameservers of /etc/resolv.conf */
  upstreams?: string[];
  log(m: string): void;
  forwardTimeoutMs?: number;
}

/** The nameservers of a resolv.conf text. */
export function nameservers(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split("\n")) {
    const [k, v] = line.trim().split(/\s+/);
    if (k === "nameserver" && v) out.push(v);
  }
  return out;
}

export class DnsServer {
  private udp?: dgram.Socket;
  private tcp?: net.Server;
  private upstreamSock?: dgram.Socket;
  private readonly pending = new Map<
    number,
    { done: (b: Buffer | undefined) => void; timer: NodeJS.Timeout }
  >();
  private nextId = Math.floor(Math.random() * 65536);
  port = 0;
  queries = 0;
  readonly upstreams: string[];

  constructor(private readonly opts: DnsServerOptions) {
    let ups = opts.upstreams;
    if (!ups) {
      try {
        ups = nameservers(readFileSync("/etc/resolv.conf", "utf8"));
      } catch {
        ups = [];
      }
    }
    this.upstreams = ups.filter((u) => net.isIPv4(u));
  }

  async start(): Promise<void> {
    const udp = dgram.createSocket("udp4");
    await new Promise<void>((resolve, reject) => {
      udp.once("error", reject);
      udp.bind(this.opts.port, this.opts.host, () => {
        udp.off("error", reject);
        resolve();
      });
    });
    this.udp = udp;
    this.port = udp.address().port;
    udp.on("message", (msg, rinfo) => {
      this.handle(msg, true).then(
        (out) => out && udp.send(out, rinfo.port, rinfo.address),
        () => {},
      );
    });
    udp.on("error", (e) => this.opts.log(`dns udp: ${e.message}`));
    const tcp = net.createServer((sock) => this.serveTcp(sock));
    await new Promise<void>((resolve, reject) => {
      tcp.once("error", reject);
      tcp.listen(this.port, this.opts.host, () => {
        tcp.off("error", reject);
        resolve();
      });
    });
    this.tcp = tcp;
    const up = dgram.createSocket("udp4");
    up.on("message", (msg) => {
      if (msg.length < 2) return;
      const id = msg.readUInt16BE(0);
      const p = this.pending.get(id);
      if (p) p.done(msg);
    });
    up.on("error", (e) => this.opts.log(`dns upstream socket: ${e.message}`));
    await new Promise<void>((resolve) => up.bind(0, resolve));
    this.upstreamSock = up;
  }

  async stop(): Promise<void> {
    for (const p of this.pending.values()) p.done(undefined);
    this.udp?.close();
    this.upstreamSock?.close();
    await new Promise<void>((r) => (this.tcp ? this.tcp.close(() => r()) : r()));
  }

  private serveTcp(sock: net.Socket): void {
    let buf = Buffer.alloc(0);
    sock.setTimeout(10_000, () => sock.destroy());
    sock.on("error", () => {});
    sock.on("data", (d) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 2) {
        const len = buf.readUInt16BE(0);
        if (buf.length < 2 + len) break;
        const msg = buf.subarray(2, 2 + len);
        buf = buf.subarray(2 + len);
        this.handle(msg, false).then(
          (out) => {
            if (!out || sock.destroyed) return;
            const head = Buffer.alloc(2);
            head.writeUInt16BE(out.length);
            sock.write(Buffer.concat([head, out]));
          },
          () => {},
        );
      }
    });
  }

  /** One query in, one response out (undefined: no answer at all). */
  async handle(msg: Buffer, udp: boolean): Promise<Buffer | undefined> {
    this.queries++;
    let q: packet.DecodedPacket;
    try {
      q = packet.decode(msg);
    } catch {
      if (msg.length < 12) return undefined;
      const out = Buffer.from(msg.subarray(0, 12));
      out.writeUInt16BE(0x8000 | RCODE_FORMERR, 2);
      out.fill(0, 4);
      return out;
    }
    const question = q.questions?.[0];
    if (!question)
      return this.reply(q, { rcode: RCODE_FORMERR as 0, answers: [], additionals: [], authorities: [] }, udp);
    const ans = this.opts.records.answer(question.name, question.type);
    if (ans === FORWARD) return this.forward(msg, q, udp);
    return this.reply(q, ans, udp);
  }

  private reply(q: packet.DecodedPacket, ans: Answer, udp: boolean): Buffer {
    const flags =
      packet.AUTHORITATIVE_ANSWER |
      (q.flag_rd ? packet.RECURSION_DESIRED : 0) |
      packet.RECURSION_AVAILABLE |
      (ans.rcode & 0xf);
    const res: packet.Packet = {
      type: "response",
      id: q.id,
      flags,
      questions: q.questions,
      answers: ans.answers as packet.Answer[],
      additionals: ans.additionals as packet.Answer[],
      authorities: ans.authorities as packet.Answer[],
    };
    let out = packet.encode(res);
    const opt = q.additionals?.find((r) => r.type === "OPT") as { udpPayloadSize?: number } | undefined;
    const limit = Math.max(512, opt?.udpPayloadSize ?? 512);
    if (udp && out.length > limit) {
      // too big for UDP: the client asks again over TCP
      out = packet.encode({
        ...res,
        flags: flags | packet.TRUNCATED_RESPONSE,
        answers: [],
        additionals: [],
        authorities: [],
      });
    }
    return out;
  }

  private servfail(q: packet.DecodedPacket): Buffer {
    return packet.encode({
      type: "response",
      id: q.id,
      flags: (q.flag_rd ? packet.RECURSION_DESIRED : 0) | packet.RECURSION_AVAILABLE | RCODE_SERVFAIL,
      questions: q.questions,
    });
  }

  private async forward(msg: Buffer, q: packet.DecodedPacket, udp: boolean): Promise<Buffer> {
    const timeout = this.opts.forwardTimeoutMs ?? 2000;
    for (const up of this.upstreams) {
      const got = udp ? await this.forwardUdp(msg, up, timeout) : await this.forwardTcp(msg, up, timeout);
      if (got) return got;
    }
    return this.servfail(q);
  }

  private forwardUdp(msg: Buffer, upstream: string, timeoutMs: number): Promise<Buffer | undefined> {
    const sock = this.upstreamSock;
    if (!sock) return Promise.resolve(undefined);
    const origId = msg.readUInt16BE(0);
    let id = this.nextId++ & 0xffff;
    while (this.pending.has(id)) id = this.nextId++ & 0xffff;
    const out = Buffer.from(msg);
    out.writeUInt16BE(id, 0);
    return new Promise((resolve) => {
      const done = (b: Buffer | undefined) => {
        clearTimeout(timer);
        this.pending.delete(id);
        if (b) {
          const copy = Buffer.from(b);
          copy.writeUInt16BE(origId, 0);
          resolve(copy);
        } else resolve(undefined);
      };
      const timer = setTimeout(() => done(undefined), timeoutMs);
      this.pending.set(id, { done, timer });
      sock.send(out, 53, upstream, (e) => e && done(undefined));
    });
  }

  private forwardTcp(msg: Buffer, upstream: string, timeoutMs: number): Promise<Buffer | undefined> {
    return new Promise((resolve) => {
      const sock = net.connect(53, upstream);
      let buf = Buffer.alloc(0);
      const finish = (b: Buffer | undefined) => {
        sock.destroy();
        resolve(b);
      };
      sock.setTimeout(timeoutMs, () => finish(undefined));
      sock.on("error", () => finish(undefined));
      sock.on("connect", () => {
        const head = Buffer.alloc(2);
        head.writeUInt16BE(msg.length);
        sock.write(Buffer.concat([head, msg]));
      });
      sock.on("data", (d) => {
        buf = Buffer.concat([buf, d]);
        if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0))
          finish(buf.subarray(2, 2 + buf.readUInt16BE(0)));
      });
    });
  }
}
