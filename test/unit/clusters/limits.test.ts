// A cluster's request rate limit (workers/clusters/limits.ts): a bucket one second deep,
// refilled at the rate, 429 with Retry-After past it; no limit set, no bucket.
import { describe, expect, it } from "vitest";
import { StatusError } from "../../../api/errors";
import { takeRequest } from "../../../workers/clusters/limits";

describe("cluster request limits", () => {
  it("takes `rate` requests at once, then refuses with 429 until the bucket refills", () => {
    const key = `k-${Math.random()}`;
    for (let i = 0; i < 3; i++) takeRequest(key, 3, 1000);
    let err: unknown;
    try {
      takeRequest(key, 3, 1000);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(StatusError);
    expect((err as StatusError).code).toBe(429);
    expect((err as StatusError).toStatus()).toMatchObject({
      reason: "TooManyRequests",
      details: { retryAfterSeconds: 1 },
    });
    // a third of a second later, one more
    takeRequest(key, 3, 1334);
    expect(() => takeRequest(key, 3, 1334)).toThrow(StatusError);
  });

  it("lets everything through without a limit", () => {
    for (let i = 0; i < 1000; i++) takeRequest("unlimited", undefined);
  });
});
