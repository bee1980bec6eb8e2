// Prints the plain closing line CI reads: "N passed, N failed, N skipped". When a test failed,
// it also says whether the shared server still answers, and shows the end of its engine's
// output (global-setup.ts), so that a failure on CI can be read from CI's log alone.
import type { Reporter, TestModule } from "vitest/node";
import { SHARED_SERVER_DIAGNOSIS } from "./shared-diagnosis";

export default class SummaryReporter implements Reporter {
  async onTestRunEnd(modules: ReadonlyArray<TestModule>) {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const m of modules) {
      for (const t of m.children.allTests()) {
        const s = t.result().state;
        if (s === "passed") passed++;
        else if (s === "failed") failed++;
        else skipped++;
      }
      if (m.state() === "failed" && [...m.children.allTests()].length === 0) failed++;
    }
    if (failed > 0) {
      const diagnose = (globalThis as Record<symbol, (() => Promise<string>) | undefined>)[
        SHARED_SERVER_DIAGNOSIS
      ];
      if (diagnose) console.log(`\n${await diagnose()}`);
    }
    console.log(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
  }
}
