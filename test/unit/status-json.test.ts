import { describe, expect, it } from "vitest";
import { invalid, StatusError } from "../../api/errors";
import { statusJSON } from "../../api/status-json";

describe("statusJSON", () => {
  it("escapes as encoding/json's Encoder does: <, > and & and the line separators too", () => {
    const s = new StatusError(400, "BadRequest", 'a <b> & "c"\u2028\u2029\n\t\u0001').toStatus();
    expect(statusJSON(s)).toBe(
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"a \\u003cb\\u003e \\u0026 \\"c\\"\\u2028\\u2029\\n\\t\\u0001","reason":"BadRequest","code":400}\n',
    );
  });

  it("leaves out what the Go type's omitempty leaves out, and keeps a set but empty details", () => {
    expect(statusJSON({ status: "Failure", message: "", reason: "", code: 500 })).toBe(
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","code":500}\n',
    );
    expect(statusJSON({ status: "Success", details: {} })).toBe(
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{}}\n',
    );
  });

  it("writes details and causes in the Go structs' order, whatever order they were made in", () => {
    const e = invalid({ group: "apps", kind: "Deployment" }, "web", [
      { field: "spec.replicas", message: "must be >= 0", type: "FieldValueInvalid" },
      { type: "FieldValueRequired", message: "Required value", field: "" },
    ]);
    const body = statusJSON(e.toStatus());
    expect(body).toContain(
      '"details":{"name":"web","group":"apps","kind":"Deployment","causes":[{"reason":"FieldValueInvalid","message":"must be \\u003e= 0","field":"spec.replicas"},{"reason":"FieldValueRequired","message":"Required value"}]},"code":422}\n',
    );
    const late = new StatusError(429, "TooManyRequests", "slow down", {
      retryAfterSeconds: 3,
      uid: "u-1",
      kind: "pods",
      name: "p",
    });
    expect(statusJSON(late.toStatus())).toContain(
      '"details":{"name":"p","kind":"pods","uid":"u-1","retryAfterSeconds":3},"code":429}',
    );
  });

  it("the Status object itself keeps that order, for JSON written of it elsewhere (watch events)", () => {
    const s = new StatusError(410, "Expired", "too old resource version: 1 (5)").toStatus();
    expect(JSON.stringify(s)).toBe(
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}',
    );
  });
});
