// A plain SPDY upgrade carried over WebSocket, shared by the local front door, the Worker and
// the node agent.
//
// Clients before kubectl 1.31 (and client-go programs that turned WebSockets off, or that
// fall back when a WebSocket upgrade is refused) ask for exec, attach and port-forward with
// `POST ... Upgrade: SPDY/3.1` and `X-Stream-Protocol-Version` headers, then speak SPDY on the
// connection itself. A Worker cannot take over a raw connection, so the local front door
// answers that upgrade itself and carries the SPDY bytes, untouched, in the binary messages
// of a WebSocket to the Worker (GET, the same path and credentials), offering the subprotocol
// `<stream protocol>+spdy-upgrade.edgeplane.dev`. The agent pipes the same bytes to the
// container runtime's streaming server, upgraded with that stream protocol: the SPDY session
// runs end to end between the client and the runtime, as kubectl 1.31+'s tunnelled
// `SPDY/3.1+portforward.k8s.io` does for port-forward.
//
// The request was a POST, so it is authorized as `create` on the subresource, as upstream
// authorizes a SPDY upgrade.

export const SPDY_UPGRADE_SUFFIX = "+spdy-upgrade.edgeplane.dev";

/** The stream protocols carried: remotecommand (exec, attach) and port-forward. */
export const REMOTECOMMAND_STREAM_PROTOCOL = "v4.channel.k8s.io";
export const PORT_FORWARD_STREAM_PROTOCOL = "portforward.k8s.io";

/** The WebSocket subprotocol that carries a SPDY session of `streamProtocol`. */
export function spdyUpgradeProtocol(streamProtocol: string): string {
  return `${streamProtocol}${SPDY_UPGRADE_SUFFIX}`;
}

/** The stream protocol a WebSocket subprotocol carries over SPDY, when it is one of these. */
export function carriedStreamProtocol(wsProtocol: string | undefined): string | undefined {
  if (!wsProtocol?.endsWith(SPDY_UPGRADE_SUFFIX)) return undefined;
  return wsProtocol.slice(0, -SPDY_UPGRADE_SUFFIX.length);
}

/** Whether any subprotocol a WebSocket request offers is a carried SPDY upgrade. */
export function offersSpdyUpgrade(secWebSocketProtocol: string | null | undefined): boolean {
  return (secWebSocketProtocol ?? "").split(",").some((p) => p.trim().endsWith(SPDY_UPGRADE_SUFFIX));
}
