// The node-local relay to the apiserver (as k3s's agent load balancer): a TCP listener on the
// node's address whose every connection is piped to the host and port of --server. The
// proxier sends the `kubernetes` Service (ClusterIP:443) here, so a pod's TLS session runs
// end to end with the apiserver's front door; the relay never sees inside it. A node of a
// cluster other than the root says which one first (api/wire/cluster-preamble.ts), so that
// its pods reach their own cluster's apiserver.
import net from "node:net";
import { clusterOfServer, clusterPreamble } from "../../api/wire/cluster-preamble";

export class ApiserverRelay {
  private server?: net.Server;
  private readonly sockets = new Set<net.Socket>();
  port = 0;
  connections = 0;

  constructor(
    private readonly upstream: { host: string; port: number; cluster?: string },
    private readonly listen: { host: string; port: number },
    private readonly log: (m: string) => void,
  ) {}

  /**
   * The upstream of a --server URL: its host and port (443/80 by scheme when absent), and the
   * cluster its path names (/clusters/<name>), if any.
   */
  static upstreamOf(server: string): { host: string; port: number; cluster?: string } {
    const u = new URL(server);
    const host = u.hostname.replace(/^\[|\]$/g, "");
    const port = u.port ? Number(u.port) : u.protocol === "https:" ? 443 : 80;
    const cluster = clusterOfServer(server);
    return cluster ? { host, port, cluster } : { host, port };
  }

  async start(): Promise<void> {
    const preamble = this.upstream.cluster
      ? Buffer.from(clusterPreamble(this.upstream.cluster), "latin1")
      : undefined;
    const server = net.createServer((client) => {
      this.connections++;
      const up = net.connect(this.upstream.port, this.upstream.host);
      if (preamble) up.write(preamble);
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
