// A fresh local control plane for the authz-chain benchmark: like startApiServer, but with wrangler
// vars (authorization modes, admission plugins) and extra static token lines, and a target for
// the non-admin benchmark user next to the admin one.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type * as DevServer from "../../local-engine/devserver";
import { snapshotSources } from "./apiserver";
import type { Target } from "./http";

export interface AuthzServerOptions {
  /** wrangler vars, e.g. { EDGEPLANE_AUTHORIZATION_MODES: "AlwaysAllow" } */
  vars?: Record<string, string>;
  /** extra token-file lines `token,user,uid,group` */
  tokens?: string[];
  /** bearer token of the user the measured requests run as */
  userToken: string;
}

export interface AuthzServer {
  /** the front door as the admin (system:masters) */
  admin: Target;
  /** the front door as the benchmark user */
  user: Target;
  /** process group of the engine and its workerd (for CPU accounting) */
  pgid: number;
  stop(): Promise<void>;
}

const jsonHeaders = (token: string) => ({
  authorization: `Bearer ${token}`,
  "content-type": "application/json",
  accept: "application/json",
});

const live = new Set<{ pgid: number; dir: string }>();
let signalsHooked = false;

/** On Ctrl-C, every server this process started goes down with it. */
function hookSignals(): void {
  if (signalsHooked) return;
  signalsHooked = true;
  const onSignal = () => {
    for (const s of live) {
      try {
        process.kill(-s.pgid, "SIGKILL");
      } catch {}
      rmSync(s.dir, { recursive: true, force: true });
    }
    process.exit(130);
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
}

export async function startAuthzServer(opts: AuthzServerOptions): Promise<AuthzServer> {
  const dir = mkdtempSync(join(tmpdir(), "edgeplane-bench-authz-"));
  const root = snapshotSources(dir);
  const dev = (await import(pathToFileURL(join(root, "local-engine/devserver.ts")).href)) as typeof DevServer;
  let s: Awaited<ReturnType<typeof dev.startDevServer>>;
  try {
    s = await dev.startDevServer({
      stateDir: join(dir, "state"),
      quiet: true,
      vars: opts.vars ?? {},
      tokens: opts.tokens ?? [],
      timeoutMs: 120000,
    });
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  hookSignals();
  const entry = { pgid: s.child.pid as number, dir };
  live.add(entry);
  return {
    admin: { host: "127.0.0.1", port: s.port, headers: jsonHeaders(s.token) },
    user: { host: "127.0.0.1", port: s.port, headers: jsonHeaders(opts.userToken) },
    pgid: entry.pgid,
    stop: async () => {
      live.delete(entry);
      await s.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
