// A metav1.Status in the bytes kube-apiserver sends: its Go struct's field order (kind,
// apiVersion, metadata, status, message, reason, details, code; details as name, group,
// kind, uid, causes, retryAfterSeconds; each cause as reason, message, field), empty fields
// left out as their omitempty tags say, strings escaped as encoding/json's Encoder escapes
// them (<, > and & too), and the newline the Encoder ends each value with. Clients that
// compare error bodies byte for byte (some libraries' own tests) see upstream's.

/** What is read of a Status: the api's, or the looser wire shape of the node tunnel's. */
export interface StatusLike {
  status?: string;
  message?: string;
  reason?: string;
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    uid?: string;
    causes?: { reason?: string; type?: string; message?: string; field?: string }[];
    retryAfterSeconds?: number;
  };
  code?: number;
}

const HTML = /[<>&\u2028\u2029]/;
const HTML_ALL = /[<>&\u2028\u2029]/g;
const hex = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;

/** A string as encoding/json writes it (JSON.stringify's escapes are Go's, but for these). */
function str(s: string): string {
  const j = JSON.stringify(s);
  return HTML.test(j) ? j.replace(HTML_ALL, hex) : j;
}

/** A Go int32 as JSON: whole, never a fraction or an exponent. */
const int = (n: number) => String(Math.trunc(n));

function detailsJSON(d: NonNullable<StatusLike["details"]>): string {
  let out = "";
  const add = (key: string, value: string) => {
    out += `${out ? "," : ""}"${key}":${value}`;
  };
  if (d.name) add("name", str(d.name));
  if (d.group) add("group", str(d.group));
  if (d.kind) add("kind", str(d.kind));
  if (d.uid) add("uid", str(d.uid));
  if (d.causes?.length) {
    const causes = d.causes.map((c) => {
      // the cause's type is "reason" on the wire (a Status from the api still says "type")
      const parts: string[] = [];
      const reason = c.reason ?? c.type;
      if (reason) parts.push(`"reason":${str(reason)}`);
      if (c.message) parts.push(`"message":${str(c.message)}`);
      if (c.field) parts.push(`"field":${str(c.field)}`);
      return `{${parts.join(",")}}`;
    });
    add("causes", `[${causes.join(",")}]`);
  }
  if (d.retryAfterSeconds) add("retryAfterSeconds", int(d.retryAfterSeconds));
  return `{${out}}`;
}

/** The Status's JSON body, newline included. */
export function statusJSON(s: StatusLike): string {
  let out = '{"kind":"Status","apiVersion":"v1","metadata":{}';
  if (s.status) out += `,"status":${str(s.status)}`;
  if (s.message) out += `,"message":${str(s.message)}`;
  if (s.reason) out += `,"reason":${str(s.reason)}`;
  // a details pointer that is set is written even when empty (`"details":{}`)
  if (s.details) out += `,"details":${detailsJSON(s.details)}`;
  if (s.code) out += `,"code":${int(s.code)}`;
  return `${out}}\n`;
}
