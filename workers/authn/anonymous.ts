// Where a request that carries no credential at all may go on as system:anonymous. Upstream
// serves anonymous requests everywhere by default and lets RBAC refuse them (403), or, with
// AuthenticationConfiguration's anonymous.conditions, only on listed paths, the rest 401.
// Here the default is that list: health, version, and the dashboard's sign-in page (which
// holds no data), which is all system:unauthenticated is granted anyway (system:public-info-
// viewer); elsewhere no credential is 401, so clients are told to log in rather than that
// "system:anonymous" is forbidden. EDGEPLANE_ANONYMOUS=all restores upstream's default.
import { unauthorized } from "../../api/errors";
import type { AuthnVars } from "./types";

/** system:public-info-viewer's paths (upstream grants system:unauthenticated nothing else), and the dashboard's shell */
const EXACT = new Set(["/healthz", "/livez", "/readyz", "/version", "/version/", "/dashboard"]);

export type AnonymousMode = "health" | "all";

export function anonymousMode(env: AuthnVars): AnonymousMode {
  const v = (env.EDGEPLANE_ANONYMOUS ?? "").trim().toLowerCase();
  return v === "all" ? "all" : "health";
}

/** Whether `path` (within the cluster) is served to a caller with no credential. */
export function anonymousAllowed(path: string, mode: AnonymousMode): boolean {
  if (mode === "all") return true;
  return EXACT.has(path) || path.startsWith("/dashboard/");
}

/** Throws 401 when a request with no credential may not be served as system:anonymous at `path`. */
export function checkAnonymous(path: string, env: AuthnVars): void {
  if (!anonymousAllowed(path, anonymousMode(env))) throw unauthorized();
}
