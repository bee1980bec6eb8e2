// A private control plane for suites that reconfigure or crash it: real workerd (the deploy bundle) in a
// temporary state dir, stopped and removed by the caller.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { startDevServer } from "../../local-engine/devserver";
import type { Target } from "./cluster";

export interface OwnServer extends Target {
  httpsUrl: string;
  port: number;
  /** workerd's own port, behind the front door */
  internalPort: number;
  stateDir: string;
  caCert: string;
  stop(): Promise<void>;
  /** SIGKILL of the engine and its workerd: a crash, no clean shutdown. */
  kill(): Promise<void>;
  output(): string;
}

export interface OwnServerOptions {
  stateDir?: string;
  port?: number;
  vars?: Record<string, string>;
  /** the cron trigger's period, for tests that cannot wait a minute */
  cronSeconds?: number;
}

export function tempStateDir(prefix = "edgeplane-own-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export async function startOwnServer(opts: OwnServerOptions = {}): Promise<OwnServer> {
  const stateDir = opts.stateDir ?? tempStateDir();
  return (await startDevServer({
    stateDir,
    port: opts.port,
    vars: opts.vars,
    cronSeconds: opts.cronSeconds,
    quiet: true,
  })) as OwnServer;
}

export function removeStateDir(dir: string | undefined): void {
  if (dir) rmSync(dir, { recursive: true, force: true });
}

/**
 * A server of the suite's own, started before its tests and stopped (its state removed) after
 * them: the object is filled in when it has started.
 */
export function ownServerForSuite(opts: OwnServerOptions = {}): OwnServer {
  const server = {} as OwnServer;
  beforeAll(async () => {
    Object.assign(server, await startOwnServer(opts));
  }, 60_000);
  afterAll(async () => {
    await server.stop?.();
    removeStateDir(server.stateDir);
  });
  return server;
}
