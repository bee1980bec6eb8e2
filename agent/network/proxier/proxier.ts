// The sync loop: a change marks the table dirty; after a short coalescing delay the whole
// desired table is compiled and the difference from the table the kernel last accepted is
// applied in one nft transaction (the whole table when there is no accepted one, or when a
// difference does not apply). A failed apply leaves the kernel's table as it was: the loop
// reports it, keeps the last good table, and retries with backoff.
import { type NftResult, runNft } from "./nft";
import { emptyRuleset, type Ruleset, renderDiff, renderFull, rulesetSize } from "./ruleset";

export interface SyncResult {
  ok: boolean;
  /** "full", "diff" or "none" (nothing to change) */
  mode: "full" | "diff" | "none";
  error?: string;
  compileMs: number;
  applyMs: number;
  /** from the first change this sync covers to the end of the apply */
  latencyMs: number;
  size: ReturnType<typeof rulesetSize>;
}

export interface ProxierOptions {
  table: string;
  /** builds the whole desired table (Services, then policies) into an empty ruleset */
  compile(rs: Ruleset): void;
  onSync?(r: SyncResult): void;
  log(m: string): void;
  /** wait after the first change before syncing, so a burst becomes one sync */
  coalesceMs?: number;
  /** applies a script; `full` tells a whole-table load from a partial one */
  nft?: (script: string, full: boolean) => Promise<NftResult>;
}

export class Proxier {
  private applied: Ruleset | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private dirtySince: number | undefined;
  private retryMs = 0;
  private stopped = false;
  last: SyncResult | undefined;
  syncs = 0;

  constructor(private readonly opts: ProxierOptions) {}

  get table(): string {
    return this.opts.table;
  }

  /** The table the kernel holds now (as last applied), for tests and diagnostics. */
  get current(): Ruleset | undefined {
    return this.applied;
  }

  /** Marks the table dirty; a sync follows after the coalescing delay. */
  requestSync(): void {
    if (this.stopped) return;
    this.dirtySince ??= performance.now();
    this.schedule(this.opts.coalesceMs ?? 5);
  }

  private schedule(ms: number): void {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.running) return; // the running sync looks at dirtySince when it ends
      this.running = this.runOnce().finally(() => {
        this.running = undefined;
        if (this.dirtySince !== undefined) this.schedule(this.retryMs || (this.opts.coalesceMs ?? 5));
      });
    }, ms);
  }

  /** Syncs now (after any sync under way) and returns its result. */
  async syncNow(): Promise<SyncResult> {
    while (this.running) await this.running;
    this.dirtySince ??= performance.now();
    clearTimeout(this.timer);
    this.timer = undefined;
    this.running = this.runOnce();
    await this.running.finally(() => (this.running = undefined));
    return this.last!;
  }

  private async runOnce(): Promise<void> {
    const since = this.dirtySince ?? performance.now();
    this.dirtySince = undefined;
    const apply = this.opts.nft ?? ((s: string) => runNft(s));
    const t0 = performance.now();
    const next = emptyRuleset(this.opts.table);
    let compileError: string | undefined;
    try {
      this.opts.compile(next);
    } catch (e) {
      compileError = (e as Error).message;
    }
    const t1 = performance.now();
    let mode: SyncResult["mode"] = "none";
    let res: NftResult = { ok: true, ms: 0 };
    if (compileError) res = { ok: false, error: `compiling the table: ${compileError}`, ms: 0 };
    else {
      let script = "";
      if (this.applied) {
        try {
          script = renderDiff(this.applied, next);
          mode = script ? "diff" : "none";
        } catch {
          script = "";
          mode = "full";
        }
      }
      if (!this.applied || mode === "full") {
        script = renderFull(next);
        mode = "full";
      }
      if (script) res = await apply(script, mode === "full");
      if (!res.ok && mode === "diff") {
        // the kernel's table is not what we think (edited by hand, or an earlier race): replace it
        this.opts.log(`nft: a partial update failed (${res.error}); replacing the whole table`);
        mode = "full";
        res = await apply(renderFull(next), true);
      }
    }
    const end = performance.now();
    this.syncs++;
    if (res.ok) {
      this.applied = next;
      this.retryMs = 0;
    } else {
      this.retryMs = Math.min(Math.max(this.retryMs * 2, 1000), 30_000);
      this.dirtySince ??= since; // try again later
    }
    this.last = {
      ok: res.ok,
      mode,
      error: res.error,
      compileMs: t1 - t0,
      applyMs: end - t1,
      latencyMs: end - since,
      size: rulesetSize(next),
    };
    this.opts.onSync?.(this.last);
  }

  /** Stops syncing; removes the table when asked (the node stops serving Services). */
  async stop(removeTable: boolean): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.running) await this.running;
    if (removeTable) {
      const apply = this.opts.nft ?? ((s: string) => runNft(s));
      const t = this.opts.table;
      await apply(`add table ip ${t}\ndelete table ip ${t}\n`, true);
    }
  }
}
