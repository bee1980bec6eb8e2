// Carrying the machine's local services into the hosts' network namespaces without renaming
// them: in the machine's namespace a Unix socket per service forwards to 127.0.0.1:<port>
// (the registries, the control plane); in each host a relay process listens on the same
// 127.0.0.1:<port> and forwards to that socket. Unix sockets are files, not bound to a network
// namespace, so image names (127.0.0.1:5000/...), registry credentials and the server URL stay
// what they are on the machine.
import { connect, createServer, type Server, type Socket } from "node:net";

export interface RelayRoute {
  port: number;
  socket: string;
}

function pipe(a: Socket, b: Socket): void {
  a.pipe(b);
  b.pipe(a);
  const end = () => {
    a.destroy();
    b.destroy();
  };
  a.on("error", end);
  b.on("error", end);
  a.on("close", end);
  b.on("close", end);
}

/** The machine's side: a Unix socket per route forwarding to 127.0.0.1:<port>. */
export async function machineRelays(routes: RelayRoute[]): Promise<{ close(): Promise<void> }> {
  const servers: Server[] = [];
  for (const r of routes) {
    const srv = createServer((c) => pipe(c, connect({ host: "127.0.0.1", port: r.port })));
    await new Promise<void>((res, rej) => {
      srv.once("error", rej);
      srv.listen(r.socket, () => res());
    });
    servers.push(srv);
  }
  return {
    close: () =>
      Promise.all(servers.map((s) => new Promise<void>((res) => s.close(() => res())))).then(() => {}),
  };
}

/** A host's side (run inside its namespace): 127.0.0.1:<port> forwarding to the route's socket. */
export async function hostRelays(routes: RelayRoute[]): Promise<Server[]> {
  const servers: Server[] = [];
  for (const r of routes) {
    const srv = createServer((c) => pipe(c, connect(r.socket)));
    await new Promise<void>((res, rej) => {
      srv.once("error", rej);
      srv.listen(r.port, "127.0.0.1", () => res());
    });
    servers.push(srv);
  }
  return servers;
}
