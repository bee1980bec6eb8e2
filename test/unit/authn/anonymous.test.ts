// Where a request without any credential is served as system:anonymous (workers/authn/anonymous.ts).
import { describe, expect, it } from "vitest";
import { anonymousAllowed, anonymousMode, checkAnonymous } from "../../../workers/authn/anonymous";

describe("anonymous requests", () => {
  it("by default reach health, version and the dashboard's sign-in page only", () => {
    const mode = anonymousMode({});
    expect(mode).toBe("health");
    for (const p of ["/livez", "/readyz", "/healthz", "/version", "/dashboard/", "/dashboard/app.js"])
      expect(anonymousAllowed(p, mode), p).toBe(true);
    for (const p of [
      "/",
      "/api",
      "/apis",
      "/api/v1/pods",
      "/openapi/v2",
      "/livezz",
      "/readyz/etcd",
      "/versions",
      "/dashboards",
    ])
      expect(anonymousAllowed(p, mode), p).toBe(false);
  });

  it("elsewhere a 401 Unauthorized Status", () => {
    expect(() => checkAnonymous("/api/v1/namespaces", {})).toThrow(
      expect.objectContaining({ code: 401, reason: "Unauthorized" }),
    );
    expect(() => checkAnonymous("/version", {})).not.toThrow();
  });

  it("EDGEPLANE_ANONYMOUS=all is upstream's default: everywhere, RBAC decides", () => {
    expect(anonymousAllowed("/api/v1/pods", anonymousMode({ EDGEPLANE_ANONYMOUS: "all" }))).toBe(true);
    expect(anonymousMode({ EDGEPLANE_ANONYMOUS: "bogus" })).toBe("health");
  });
});
