// The local front door: one port that speaks HTTPS (for kubectl, which sends credentials
// only over TLS) and plain HTTP (for curl and scripts), told apart by the first byte of
// each connection, both forwarded byte for byte to workerd. On Cloudflare the edge
// does this job; locally this is the only thing between a client and workerd.
import net from "node:net";
import { Duplex } from "node:stream";
import tls from "node:tls";

/**
 * The client's byte stream again from its first chunk: TLS cannot wrap a socket that was
 * already read from, but it can wrap a JS stream that replays what was read.
 */
function replaying(client, first) {
  const d = new Duplex({
    read() {
      client.resume();
    },
    write(chunk, enc, cb) {
      client.write(chunk, enc, cb);
    },
    final(cb) {
      client.end();
      cb();
    },
    destroy(err, cb) {
      client.destroy();
      cb(err);
    },
  });
  d.push(first);
  client.on("data", (c) => {
    if (!d.push(c)) client.pause();
  });
  client.on("end", () => d.push(null));
  client.on("close", () => d.destroy());
  return d;
}

const TLS_HANDSHAKE = 0x16;

/**
 * Bytes from one socket to the other, pausing the reader while the writer is full. Leaner
 * than stream.pipe per chunk, which counts when one watch event goes out to a thousand
 * watchers at once.
 */
function forward(from, to) {
  const resume = () => from.resume();
  from.on("data", (chunk) => {
    if (!to.write(chunk)) {
      from.pause();
      to.once("drain", resume);
    }
  });
  from.on("end", () => to.end());
}

export function startFront({ port, host = "127.0.0.1", upstreamPort, cert, key }) {
  const secureContext = tls.createSecureContext({ cert, key });
  const sockets = new Set();
  const server = net.createServer((client) => {
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    client.on("error", () => client.destroy());
    client.once("data", (first) => {
      client.pause();
      const upstream = net.connect({ port: upstreamPort, host: "127.0.0.1" });
      upstream.setNoDelay(true);
      sockets.add(upstream);
      upstream.on("close", () => sockets.delete(upstream));
      let down = client;
      if (first[0] === TLS_HANDSHAKE) {
        down = new tls.TLSSocket(replaying(client, first), {
          isServer: true,
          secureContext,
          ALPNProtocols: ["http/1.1"],
        });
        down.on("error", () => {
          client.destroy();
          upstream.destroy();
        });
      } else client.unshift(first);
      down.setNoDelay?.(true);
      upstream.on("error", () => down.destroy());
      down.on("close", () => upstream.destroy());
      upstream.on("close", () => down.destroy());
      forward(down, upstream);
      forward(upstream, down);
      client.resume();
    });
  });
  server.listen(port, host);
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.once("listening", () =>
      resolve({
        close: () =>
          new Promise((r) => {
            for (const s of sockets) s.destroy();
            server.close(() => r());
          }),
      }),
    );
  });
}
