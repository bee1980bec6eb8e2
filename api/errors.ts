// metav1.Status errors. Every failure the apiserver reports is a StatusError,
// thrown anywhere and turned into a response in one place (workers/encoding/respond.ts).

export type StatusReason =
  | "BadRequest"
  | "Unauthorized"
  | "Forbidden"
  | "NotFound"
  | "AlreadyExists"
  | "Conflict"
  | "Gone"
  | "Expired"
  | "Invalid"
  | "MethodNotAllowed"
  | "NotAcceptable"
  | "RequestEntityTooLarge"
  | "UnsupportedMediaType"
  | "TooManyRequests"
  | "Timeout"
  | "ServerTimeout"
  | "InternalError"
  | "ServiceUnavailable";

export interface StatusCause {
  type?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

/** metav1.StatusCause on the wire: the cause's type travels under the JSON key "reason". */
interface WireCause {
  reason?: string;
  message?: string;
  field?: string;
}

function causesToWire(causes: StatusCause[]): WireCause[] {
  return causes.map(({ type, message, field }) => {
    const w: WireCause = {};
    if (type) w.reason = type;
    // empty ones are left out, as the Go type's omitempty does
    if (message) w.message = message;
    if (field) w.field = field;
    return w;
  });
}

/** Details with upstream's field order and omitempty: name, group, kind, uid, causes, retryAfterSeconds. */
function orderedDetails(d: StatusDetails): StatusDetails {
  const out: StatusDetails = {};
  if (d.name) out.name = d.name;
  if (d.group) out.group = d.group;
  if (d.kind) out.kind = d.kind;
  if (d.uid) out.uid = d.uid;
  if (d.causes?.length) out.causes = causesToWire(d.causes) as StatusCause[];
  if (d.retryAfterSeconds) out.retryAfterSeconds = d.retryAfterSeconds;
  return out;
}

function causesFromWire(causes: WireCause[]): StatusCause[] {
  return causes.map(({ reason, message, field }) => ({ type: reason, message, field }));
}

export interface Status {
  kind: "Status";
  apiVersion: "v1";
  metadata: Record<string, never>;
  status: "Failure" | "Success";
  message?: string;
  reason?: StatusReason | "";
  details?: StatusDetails;
  code: number;
}

/** Group/resource pair as upstream prints it in messages: `pods`, `deployments.apps`. */
export interface GroupResource {
  group: string;
  resource: string;
}

export function qualifiedResource(gr: GroupResource): string {
  return gr.group ? `${gr.resource}.${gr.group}` : gr.resource;
}

export class StatusError extends Error {
  constructor(
    readonly code: number,
    readonly reason: StatusReason,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
    this.name = "StatusError";
  }

  /** The Status, its fields in upstream's order (the Go struct's), so any JSON of it reads as upstream's. */
  toStatus(): Status {
    const s: Status = {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: this.message,
      reason: this.reason,
    } as Status;
    if (this.details) s.details = orderedDetails(this.details);
    s.code = this.code;
    return s;
  }

  static isStatus(value: unknown): value is Status {
    return typeof value === "object" && value !== null && (value as Status).kind === "Status";
  }

  /** Rebuilds an error that crossed an RPC boundary as a plain Status. */
  static fromStatus(s: Status): StatusError {
    const details = s.details?.causes
      ? { ...s.details, causes: causesFromWire(s.details.causes as WireCause[]) }
      : s.details;
    return new StatusError(s.code, (s.reason || "InternalError") as StatusReason, s.message ?? "", details);
  }
}

export const badRequest = (message: string, details?: StatusDetails) =>
  new StatusError(400, "BadRequest", message, details);

export const unauthorized = (message = "Unauthorized") => new StatusError(401, "Unauthorized", message);

export const forbidden = (message: string, details?: StatusDetails) =>
  new StatusError(403, "Forbidden", message, details);

export const notFound = (gr: GroupResource, name: string) =>
  new StatusError(404, "NotFound", `${qualifiedResource(gr)} "${name}" not found`, {
    name,
    group: gr.group || undefined,
    kind: gr.resource,
  });

export const notFoundPath = (message = "the server could not find the requested resource") =>
  new StatusError(404, "NotFound", message, {});

export const alreadyExists = (gr: GroupResource, name: string) =>
  new StatusError(409, "AlreadyExists", `${qualifiedResource(gr)} "${name}" already exists`, {
    name,
    group: gr.group || undefined,
    kind: gr.resource,
  });

export const conflict = (gr: GroupResource, name: string, why: string) =>
  new StatusError(
    409,
    "Conflict",
    `Operation cannot be fulfilled on ${qualifiedResource(gr)} "${name}": ${why}`,
    { name, group: gr.group || undefined, kind: gr.resource },
  );

export const staleResourceVersion = (gr: GroupResource, name: string) =>
  conflict(
    gr,
    name,
    "the object has been modified; please apply your changes to the latest version and try again",
  );

export const expired = (message: string) => new StatusError(410, "Expired", message);

export const gone = (message: string) => new StatusError(410, "Gone", message);

/** 422 with one cause per bad field; `kind` is the object kind, e.g. "Pod". */
export const invalid = (gk: { group: string; kind: string }, name: string, causes: StatusCause[]) => {
  const list = causes.map((c) => (c.field ? `${c.field}: ${c.message}` : (c.message ?? ""))).join(", ");
  const what = gk.group ? `${gk.kind}.${gk.group}` : gk.kind;
  const text = causes.length === 1 ? list : `[${list}]`;
  // empty fields are left out, as upstream's omitempty leaves them
  return new StatusError(422, "Invalid", `${what} "${name}" is invalid: ${text}`, {
    name: name || undefined,
    group: gk.group || undefined,
    kind: gk.kind || undefined,
    causes,
  });
};

export const methodNotAllowed = (verb: string, gr: GroupResource) =>
  new StatusError(
    405,
    "MethodNotAllowed",
    `${verb} is not supported on resources of kind "${qualifiedResource(gr)}"`,
    {
      group: gr.group || undefined,
      kind: gr.resource,
    },
  );

export const notAcceptable = (message: string) => new StatusError(406, "NotAcceptable", message);

export const tooLarge = (message = "Request entity too large: limit is 3145728") =>
  new StatusError(413, "RequestEntityTooLarge", message);

export const unsupportedMediaType = (contentType: string) =>
  new StatusError(
    415,
    "UnsupportedMediaType",
    `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (got "${contentType}")`,
  );

export const internalError = (message: string) => new StatusError(500, "InternalError", message);

/** Field error helpers, in upstream's words (field.Required, field.Invalid, ...). */
export const field = {
  required: (path: string, detail = ""): StatusCause => ({
    type: "FieldValueRequired",
    field: path,
    message: detail ? `Required value: ${detail}` : "Required value",
  }),
  invalid: (path: string, value: unknown, detail: string): StatusCause => ({
    type: "FieldValueInvalid",
    field: path,
    message: `Invalid value: ${JSON.stringify(value)}: ${detail}`,
  }),
  /** field.Invalid of a value already in upstream's printed form (a Go %#v, a type name). */
  invalidShown: (path: string, shown: string, detail: string): StatusCause => ({
    type: "FieldValueInvalid",
    field: path,
    message: `Invalid value: ${shown}: ${detail}`,
  }),
  notSupported: (path: string, value: unknown, allowed: string[]): StatusCause => ({
    type: "FieldValueNotSupported",
    field: path,
    message: `Unsupported value: ${JSON.stringify(value)}: supported values: ${allowed.map((a) => `"${a}"`).join(", ")}`,
  }),
  forbidden: (path: string, detail: string): StatusCause => ({
    type: "FieldValueForbidden",
    field: path,
    message: `Forbidden: ${detail}`,
  }),
  duplicate: (path: string, value: unknown): StatusCause => ({
    type: "FieldValueDuplicate",
    field: path,
    message: `Duplicate value: ${JSON.stringify(value)}`,
  }),
  tooMany: (path: string, count: number, max: number): StatusCause => ({
    type: "FieldValueTooMany",
    field: path,
    message: `Too many: ${count}: must have at most ${max} items`,
  }),
  tooLong: (path: string, max: number): StatusCause => ({
    type: "FieldValueTooLong",
    field: path,
    message: `Too long: may not be more than ${max} bytes`,
  }),
  unknown: (path: string): StatusCause => ({
    type: "FieldValueInvalid",
    field: path,
    message: `unknown field "${path}"`,
  }),
};
