// What the summary reporter shows of the shared server when a test failed: whether it still
// answers, and the end of its engine's output. Both run in vitest's main process, where
// global-setup.ts registers the function under this key.
export const SHARED_SERVER_DIAGNOSIS = Symbol.for("edgeplane.sharedServerDiagnosis");

/** How long the probe waits for the shared server's /livez. */
const PROBE_MS = 5000;

export function sharedServerDiagnosis(url: string, output: () => string): () => Promise<string> {
  return async () => {
    const t0 = Date.now();
    let probe: string;
    try {
      const r = await fetch(`${url}/livez`, { signal: AbortSignal.timeout(PROBE_MS) });
      probe = `/livez answered ${r.status} in ${Date.now() - t0} ms`;
    } catch (e) {
      probe = `/livez gave no answer (${String(e)}) after ${Date.now() - t0} ms`;
    }
    const tail = output().slice(-6000);
    return `shared server at ${url}: ${probe}\n--- the end of its engine's output ---\n${tail || "(nothing)"}\n---`;
  };
}
