// The node-local relay to the apiserver (as k3s's agent load balancer): a TCP listener on the
// node's address whose every connection is piped to the host and port of --server. The
// proxier sends the `kubernetes` Service (ClusterIP:443) here, so a pod's TLS session runs
// end to end with the apiserver's front door; the relay never sees inside it.
import net from "node:net";

export class ApiserverRelay {
  private server?: net.Server;
  private readonly sockets = new Set<net.Socket>();
  port = 0;
  connections = 0;

  constructor(
    private readonly upstream: { host: string; port: number },
    private readonly listen: { host: string; port: number },
    private readonly log: (m: string) => void,
  ) {}

  /** The upstream of a --server URL: its host and port (443/80 by scheme when absent). */
  static upstreamOf(server: string): { host: string; port: number } {
    const u = new URL(server);
    const host = u.hostname.replace(/^\[|\]$/g, "");
    return { host, port: u.port ? Number(u.port) : u.protocol === "https:" ? 443 : 80 };
  }

  async start(): Promise<void> {
    const server = net.createServer((client) => {
      this.connections++;
      const up = net.connect(this.upstream.port, this.upstream.host);
      this.sockets.add(client);
      this.sockets.add(up);
      const close = () => {
        client.destroy();
        up.destroy();
        this.sockets.delete(client);
        this.sockets.delete(up);
      };
      client.on("error", close);
      up.on("error", (e) => {
        this.log(`apiserver relay: ${e.message}`);
        close();
      });
      client.on("close", close);
      up.on("close", close);
      client.pipe(up);
      up.pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.listen.port, this.listen.host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    this.server = server;
    this.port = (server.address() as net.AddressInfo).port;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}
