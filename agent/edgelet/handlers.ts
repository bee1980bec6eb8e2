// Running a probe or lifecycle handler: exec through CRI ExecSync, httpGet and
// tcpSocket from the host to the pod IP, sleep.
import { connect } from "node:net";
import type { CriClient } from "../cri/client";
import type { Handler, HTTPGetAction, PodContainer, TCPSocketAction } from "../lib/kube-types";

export interface HandlerTarget {
  cri: CriClient;
  containerId: string;
  podIP?: string;
  container: PodContainer;
}

export interface HandlerResult {
  ok: boolean;
  output: string;
}

/** A named or numeric port of the container. */
export function resolvePort(port: number | string | undefined, container: PodContainer): number {
  if (typeof port === "number") return port;
  if (port === undefined) return 0;
  if (/^\d+$/.test(port)) return Number(port);
  const p = (container.ports ?? []).find((x) => x.name === port);
  if (!p) throw new Error(`port "${port}" not found in container ${container.name}`);
  return p.containerPort;
}

async function httpGet(h: HTTPGetAction, t: HandlerTarget, timeoutS: number): Promise<HandlerResult> {
  const host = h.host || t.podIP;
  if (!host) return { ok: false, output: "pod has no IP" };
  const port = resolvePort(h.port, t.container);
  const scheme = (h.scheme ?? "HTTP").toLowerCase();
  const path = h.path ? (h.path.startsWith("/") ? h.path : `/${h.path}`) : "/";
  const headers: Record<string, string> = { "user-agent": "kube-probe/1.32", accept: "*/*" };
  for (const hh of h.httpHeaders ?? []) headers[hh.name.toLowerCase()] = hh.value;
  const url = `${scheme}://${host.includes(":") ? `[${host}]` : host}:${port}${path}`;
  try {
    const res = await fetch(url, {
      headers,
      signal: AbortSignal.timeout(timeoutS * 1000),
      redirect: "manual",
    });
    const body = (await res.text()).slice(0, 10 * 1024);
    if (res.status >= 200 && res.status < 400) return { ok: true, output: body };
    return { ok: false, output: `HTTP probe failed with statuscode: ${res.status}` };
  } catch (e) {
    return { ok: false, output: `Get "${url}": ${(e as Error).message}` };
  }
}

function tcp(h: TCPSocketAction, t: HandlerTarget, timeoutS: number): Promise<HandlerResult> {
  const host = h.host || t.podIP;
  const port = resolvePort(h.port, t.container);
  return new Promise((resolve) => {
    if (!host) return resolve({ ok: false, output: "pod has no IP" });
    const s = connect({ host, port });
    const timer = setTimeout(() => {
      s.destroy();
      resolve({ ok: false, output: `dial tcp ${host}:${port}: i/o timeout` });
    }, timeoutS * 1000);
    s.on("connect", () => {
      clearTimeout(timer);
      s.destroy();
      resolve({ ok: true, output: "" });
    });
    s.on("error", (e) => {
      clearTimeout(timer);
      resolve({ ok: false, output: `dial tcp ${host}:${port}: ${e.message}` });
    });
  });
}

/** Runs one handler (exec, httpGet, tcpSocket, sleep) with a timeout in seconds. */
export async function runHandler(h: Handler, t: HandlerTarget, timeoutS: number): Promise<HandlerResult> {
  if (h.exec) {
    try {
      const r = await t.cri.execSync(t.containerId, h.exec.command ?? [], timeoutS);
      const output = Buffer.concat([r.stdout ?? Buffer.alloc(0), r.stderr ?? Buffer.alloc(0)]).toString(
        "utf8",
      );
      return {
        ok: r.exit_code === 0,
        output:
          r.exit_code === 0
            ? output
            : `command ${JSON.stringify(h.exec.command)} exited with ${r.exit_code}: ${output}`,
      };
    } catch (e) {
      return { ok: false, output: (e as Error).message };
    }
  }
  if (h.httpGet) return httpGet(h.httpGet, t, timeoutS);
  if (h.tcpSocket) return tcp(h.tcpSocket, t, timeoutS);
  if (h.sleep) {
    const seconds = Math.max(0, Number(h.sleep.seconds ?? 0));
    await new Promise((r) => setTimeout(r, seconds * 1000));
    return { ok: true, output: "" };
  }
  if (h.grpc) return { ok: true, output: "grpc probes are not supported by edgelet; assumed healthy" };
  return { ok: false, output: "handler has no action" };
}
