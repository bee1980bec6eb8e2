// A created pod's first spans (the apiserver's 1.3 to 3.1, and a controller's 4.1) as one
// compact record: a JSON tuple of the values that differ from pod to pod, not six spans of
// JSON. The apiserver encodes it; the pods' store shard keeps it in the pod's own row (the
// `trace` column of `objects`), written by the statement that stores the pod, and gives the
// spans back on a read. Pure: the Worker and the store both import it.
import type { TraceSpan } from "./trace";

/** What the apiserver saw of one pod create. Times are ms since the epoch. */
export interface CreateRecord {
  verb: string;
  userAgent: string;
  /** the request arrived (1.3); authentication began */
  received: number;
  authn?: { end: number; method: string; user: string; groups: string[] };
  /** a controller sent the create (4.1): which, for which owner, when its sync began */
  cause?: { controller: string; owner: unknown; since: number };
  authz?: { start: number; end: number; decision: string; authorizer: string; reason: string };
  admission?: {
    start: number;
    end: number;
    mutatedBy: string[];
    ran: number;
    initializersRan: boolean;
    initializersMutated: boolean;
  };
  /** the handler handed the pod to the store (2.4 opens) */
  storeStart: number;
}

const VERSION = 1;

/** The most spans a record gives (1.3, 2.1, 4.1, 2.2, 2.3, 2.4, 3.1): what it counts toward a pod's bound before it is read. */
export const MAX_CREATE_SPANS = 7;

/** Cuts a string to `n` characters (no copy when it is shorter). */
const cut = (s: string, n: number) => (s.length > n ? s.slice(0, n) : s);

/** A list of names kept to about 1.5 KiB (a span's detail stays under MAX_SPAN_BYTES). */
function boundedGroups(groups: string[]): string[] {
  let chars = 0;
  for (let i = 0; i < groups.length; i++) {
    chars += groups[i]!.length + 3;
    if (chars > 1536) return groups.slice(0, i);
  }
  return groups;
}

/** What system:masters' authorization says when it allows (the default reason, not stored). */
const MASTERS_REASON = "member of system:masters: always allowed";

/**
 * The record as the apiserver sends it with the create: times after the first are offsets
 * from it, and each span's detail stays under MAX_SPAN_BYTES (api/trace.ts), so a record is
 * bounded (a few KiB at most) and usually a couple of hundred bytes.
 */
export function encodeCreateRecord(r: CreateRecord): string {
  const { authn, cause, authz, admission: adm } = r;
  const t0 = r.received;
  return JSON.stringify([
    VERSION,
    cut(r.verb, 16),
    cut(r.userAgent, 256),
    t0,
    authn ? [authn.end - t0, cut(authn.method, 32), cut(authn.user, 256), boundedGroups(authn.groups)] : 0,
    cause ? [cut(String(cause.controller), 60), cause.owner, cause.since] : 0,
    authz
      ? [
          authz.start - t0,
          authz.end - t0,
          cut(authz.decision, 16),
          cut(authz.authorizer, 60),
          authz.authorizer === "system:masters" && authz.reason === MASTERS_REASON
            ? ""
            : cut(authz.reason, 1024),
        ]
      : 0,
    adm
      ? [
          adm.start - t0,
          adm.end - t0,
          boundedGroups(adm.mutatedBy),
          adm.ran,
          adm.initializersRan ? 1 : 0,
          adm.initializersMutated ? 1 : 0,
        ]
      : 0,
    r.storeStart - t0,
  ]);
}

/** The stored form: the pod's resourceVersion, the commit's instant and the apiserver's record. */
export function storedCreateRecord(record: string, rv: number, committedAt: number): string {
  return `[${rv},${committedAt},${record}]`;
}

/** The spans of a stored record (storedCreateRecord); none when it is missing or malformed. */
export function createRecordSpans(stored: string | null | undefined): TraceSpan[] {
  if (!stored) return [];
  let rv: unknown;
  let at: number;
  let r: unknown[];
  try {
    [rv, at, r] = JSON.parse(stored) as [unknown, number, unknown[]];
  } catch {
    return [];
  }
  if (!Array.isArray(r) || r[0] !== VERSION || typeof at !== "number") return [];
  const [, verb, userAgent, received, authn, cause, authz, adm, storeStart] = r as [
    number,
    string,
    string,
    number,
    [number, string, string, string[]] | 0,
    [string, unknown, number] | 0,
    [number, number, string, string, string] | 0,
    [number, number, string[], number, number, number] | 0,
    number,
  ];
  const spans: TraceSpan[] = [
    {
      step: "1.3",
      name: "request received",
      component: "apiserver",
      start: received,
      end: received,
      detail: { verb, userAgent },
    },
  ];
  if (authn)
    spans.push({
      step: "2.1",
      name: "authentication",
      component: "apiserver",
      start: received,
      end: received + authn[0],
      detail: { method: authn[1], user: authn[2], groups: authn[3] },
    });
  if (cause)
    spans.push({
      step: "4.1",
      name: "controller",
      component: cause[0],
      start: Math.min(cause[2], received),
      end: received,
      detail: { controller: cause[0], owner: cause[1], reactionMs: Math.max(0, received - cause[2]) },
    });
  if (authz)
    spans.push({
      step: "2.2",
      name: "authorization",
      component: "apiserver",
      start: received + authz[0],
      end: received + authz[1],
      detail: {
        decision: authz[2],
        authorizer: authz[3],
        reason: authz[4] || (authz[3] === "system:masters" ? MASTERS_REASON : ""),
      },
    });
  if (adm)
    spans.push({
      step: "2.3",
      name: "admission",
      component: "apiserver",
      start: received + adm[0],
      end: received + adm[1],
      detail: { mutatedBy: adm[2], ran: adm[3] },
    });
  spans.push({
    step: "2.4",
    name: "stored",
    component: "store",
    start: received + storeStart,
    end: at,
    detail: { resourceVersion: String(rv) },
  });
  spans.push({
    step: "3.1",
    name: "initializers",
    component: "apiserver",
    start: at,
    end: at,
    detail: { ran: !!adm && adm[4] === 1, mutated: !!adm && adm[5] === 1 },
  });
  return spans;
}
