// Audit sinks: structured console lines (what Workers Logs / wrangler tail / Logpush pick
// up: one JSON object per event, {"auditEvent": {...}}) and an in-memory ring of the last N
// events for tests and debugging. A Durable Object or Logpush sink implements AuditSink too.
import type { AuditEvent, AuditSink } from "./types";

export const consoleSink: AuditSink = {
  write(events) {
    for (const ev of events) console.log(JSON.stringify({ auditEvent: ev }));
  },
};

export class RingSink implements AuditSink {
  private buf: AuditEvent[] = [];
  constructor(readonly capacity: number) {}

  write(events: AuditEvent[]): void {
    if (this.capacity <= 0) return;
    this.buf.push(...events);
    if (this.buf.length > this.capacity) this.buf.splice(0, this.buf.length - this.capacity);
  }

  /** The kept events, oldest first. */
  events(): AuditEvent[] {
    return [...this.buf];
  }

  clear(): void {
    this.buf = [];
  }
}

/** The isolate's ring, sized by EDGEPLANE_AUDIT_RING_SIZE (0, the default, keeps nothing). */
let ring: RingSink | undefined;
export function isolateRing(size: number): RingSink {
  if (!ring || ring.capacity !== size) ring = new RingSink(size);
  return ring;
}
