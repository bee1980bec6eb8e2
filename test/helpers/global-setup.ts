// One shared control plane (real workerd, the deploy bundle) for the suites that need a server
// but no special configuration; suites that crash or reconfigure it start their own.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { startDevServer } from "../../local-engine/devserver";
import { SHARED_SERVER_DIAGNOSIS, sharedServerDiagnosis } from "./shared-diagnosis";

declare module "vitest" {
  export interface ProvidedContext {
    server: { url: string; token: string; kubeconfigPath: string };
  }
}

export default async function setup(project: TestProject) {
  const dir = mkdtempSync(join(tmpdir(), "edgeplane-test-"));
  // TEST_SERVER_LOGS=1 shows the engine's output (console output of the Worker and its objects)
  const server = await startDevServer({
    stateDir: dir,
    quiet: process.env.TEST_SERVER_LOGS !== "1",
    diagnosable: true,
  });
  project.provide("server", { url: server.url, token: server.token, kubeconfigPath: server.kubeconfigPath });
  // for the summary reporter, when a test failed (quiet: the output is kept, not printed)
  (globalThis as Record<symbol, unknown>)[SHARED_SERVER_DIAGNOSIS] = sharedServerDiagnosis(server);
  return async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
