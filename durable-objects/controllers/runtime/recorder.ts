// Events as upstream's recorder writes them (core/v1 Event, one per occurrence, repeated
// occurrences of the same reason and message counted on one object).
import { lookupGVR } from "../../../api/registry";
import { rfc3339 } from "../../../api/time";
import type { KubeObject } from "../../../api/types";
import type { ApiClient } from "./client";

export class EventRecorder {
  private recent = new Map<string, { name: string; count: number; first: string; written: number }>();

  constructor(
    private readonly api: ApiClient,
    private readonly component: string,
  ) {}

  async event(obj: KubeObject, type: "Normal" | "Warning", reason: string, message: string): Promise<void> {
    const def = lookupGVR("", "v1", "events")!;
    const ns = obj.metadata.namespace || "default";
    const now = Date.now();
    const dedupe = `${obj.metadata.uid}|${reason}|${message}`;
    const seen = this.recent.get(dedupe);
    let entry: { name: string; count: number; first: string; written: number } | undefined;
    try {
      if (seen) {
        seen.count++;
        // repeats of one event are counted, and written at most every 10 s (a spam filter, as upstream's)
        if (now - seen.written < 10_000) return;
        seen.written = now;
        await this.api.patch(def, ns, seen.name, { count: seen.count, lastTimestamp: rfc3339(now) });
        return;
      }
      const name = `${obj.metadata.name}.${now.toString(16)}${Math.floor(Math.random() * 0xfff).toString(16)}`;
      // known before the create is answered: a repeat meanwhile counts on this event, not a second one
      entry = { name, count: 1, first: rfc3339(now), written: now };
      this.recent.set(dedupe, entry);
      if (this.recent.size > 4096) this.recent.delete(this.recent.keys().next().value!);
      await this.api.create(def, {
        apiVersion: "v1",
        kind: "Event",
        metadata: { name, namespace: ns },
        involvedObject: {
          apiVersion: obj.apiVersion,
          kind: obj.kind,
          name: obj.metadata.name,
          namespace: obj.metadata.namespace,
          uid: obj.metadata.uid,
          resourceVersion: obj.metadata.resourceVersion,
        },
        reason,
        message,
        type,
        source: { component: this.component },
        firstTimestamp: rfc3339(now),
        lastTimestamp: rfc3339(now),
        count: 1,
        reportingComponent: this.component,
        reportingInstance: "",
      });
    } catch (e) {
      // a create that failed is not there to count on
      if (entry && this.recent.get(dedupe) === entry) this.recent.delete(dedupe);
      // events are best effort, as upstream
      console.warn(
        `event ${reason} for ${obj.metadata.name} not recorded: ${e instanceof Error ? e.message : e}`,
      );
    }
  }
}
