// A TCP relay in front of a server whose connections a test can cut at will, to make a
// client lose its connection the way a network failure does (RST, no clean HTTP end).
import { createConnection, createServer, type Server, type Socket } from "node:net";

export interface TcpProxy {
  port: number;
  /** Connections accepted so far. */
  accepted(): number;
  /** Destroys every open connection, both sides. */
  cutAll(): void;
  /** While refusing, new connections are reset at once. */
  refuse(on: boolean): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number, targetHost = "127.0.0.1"): Promise<TcpProxy> {
  const open = new Set<Socket>();
  let refusing = false;
  let count = 0;
  const server: Server = createServer((client) => {
    count++;
    if (refusing) {
      client.resetAndDestroy();
      return;
    }
    const upstream = createConnection({ port: targetPort, host: targetHost });
    open.add(client);
    open.add(upstream);
    const drop = () => {
      open.delete(client);
      open.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", drop);
    upstream.on("error", drop);
    client.on("close", drop);
    upstream.on("close", drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("proxy has no port");
  const cutAll = () => {
    for (const s of [...open]) s.resetAndDestroy();
    open.clear();
  };
  return {
    port: address.port,
    accepted: () => count,
    cutAll,
    refuse(on) {
      refusing = on;
    },
    close() {
      cutAll();
      return new Promise((r) => server.close(() => r()));
    },
  };
}
