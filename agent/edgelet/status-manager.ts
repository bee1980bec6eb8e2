// Sends computed PodStatus to the apiserver: a JSON merge patch on
// pods/<name>/status against the status the server last showed, only when
// something changed, at most one request in flight per pod (later updates
// coalesce into the next one), retried on failure.

import { TRACE_SPANS_HEADER, type TraceSpan } from "../../api/trace";
import type { Pod, PodStatus } from "../lib/kube-types";
import { type Api, enc, errorText } from "./api";
import { createMergePatch } from "./merge-patch";

interface Entry {
  namespace: string;
  name: string;
  uid: string;
  want?: PodStatus;
  /** The status the server has, as last seen (watch or patch answer), and its resourceVersion. */
  known: PodStatus;
  knownRV: string;
  inFlight?: Promise<void>;
  dirty: boolean;
  /** flow-trace spans (trace.ts) to send with the next write */
  spans: TraceSpan[];
}

function rvNewer(a: string, b: string): boolean {
  if (/^\d+$/.test(a) && /^\d+$/.test(b)) return BigInt(a) > BigInt(b);
  return a !== b;
}

export class StatusManager {
  private readonly entries = new Map<string, Entry>();
  patches = 0;

  constructor(
    private readonly api: Api,
    private readonly log: (m: string) => void,
  ) {}

  private entry(pod: Pod): Entry {
    const uid = pod.metadata.uid;
    let e = this.entries.get(uid);
    if (!e) {
      e = {
        namespace: pod.metadata.namespace,
        name: pod.metadata.name,
        uid,
        known: pod.status ?? {},
        knownRV: pod.metadata.resourceVersion ?? "0",
        dirty: false,
        spans: [],
      };
      this.entries.set(uid, e);
    }
    return e;
  }

  /** Records the server's view of a pod (from the watch). */
  observe(pod: Pod): void {
    const e = this.entry(pod);
    const rv = pod.metadata.resourceVersion ?? "";
    if (rvNewer(rv, e.knownRV)) {
      e.known = pod.status ?? {};
      e.knownRV = rv;
    }
  }

  /** The status the server last showed for the pod. */
  known(uid: string): PodStatus | undefined {
    return this.entries.get(uid)?.known;
  }

  /**
   * Sets the wanted status; sends it unless the server already has it. `spans`: the pod's
   * flow-trace spans (trace.ts), sent with that write, or alone in a no-op one.
   */
  set(pod: Pod, status: PodStatus, spans?: TraceSpan[]): void {
    const e = this.entry(pod);
    e.want = status;
    if (spans?.length) e.spans.push(...spans);
    if (createMergePatch(e.known, status) === undefined && e.spans.length === 0) return;
    e.dirty = true;
    this.kick(e);
  }

  private kick(e: Entry): void {
    if (e.inFlight) return;
    e.inFlight = this.send(e).finally(() => {
      e.inFlight = undefined;
      if (e.dirty && this.entries.has(e.uid)) setTimeout(() => this.kick(e), 0);
    });
  }

  private async send(e: Entry): Promise<void> {
    e.dirty = false;
    const patch = e.want === undefined ? undefined : createMergePatch(e.known, e.want);
    const spans = e.spans;
    if (patch === undefined && spans.length === 0) return;
    e.spans = [];
    try {
      const r = await this.api.mergePatch(
        `/api/v1/namespaces/${enc(e.namespace)}/pods/${enc(e.name)}/status`,
        patch === undefined ? { metadata: { uid: e.uid } } : { metadata: { uid: e.uid }, status: patch },
        spans.length ? { [TRACE_SPANS_HEADER]: JSON.stringify(spans) } : undefined,
      );
      this.patches++;
      if (r.status === 200) {
        if (r.json?.metadata?.uid && r.json.metadata.uid !== e.uid) return;
        // the answer is the pod as patched: its status is what the server now has
        e.known = (r.json?.status as PodStatus | undefined) ?? e.want ?? e.known;
        e.knownRV = r.json?.metadata?.resourceVersion ?? e.knownRV;
        return;
      }
      if (r.status === 404 || r.status === 409) {
        this.log(`status of ${e.namespace}/${e.name}: ${errorText(r)}`);
        if (r.status === 409 && spans.length) e.spans.unshift(...spans);
        return;
      }
      throw new Error(errorText(r));
    } catch (err) {
      if (e.spans.length + spans.length <= 128) e.spans.unshift(...spans);
      this.log(`status of ${e.namespace}/${e.name}: ${(err as Error).message}; retrying`);
      e.dirty = true;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  /** Waits until the latest wanted status has been sent. */
  async flush(uid: string): Promise<void> {
    const e = this.entries.get(uid);
    if (!e) return;
    for (let i = 0; i < 20 && (e.inFlight || e.dirty); i++) {
      if (e.inFlight) await e.inFlight;
      else this.kick(e);
    }
  }

  forget(uid: string): void {
    this.entries.delete(uid);
  }
}
