// The web dashboard at /dashboard/: a static shell, its stylesheet and its client script,
// all bundled into the Worker (no CDN). The shell holds no cluster data: the client calls the
// normal Kubernetes API with the bearer token the user pastes, so authentication and RBAC
// decide what each user sees. A request for the shell without credentials is a 401 whose body
// is the login page (a browser's navigation never carries the token, so the page it gets is
// always that login page until the script finds a token in sessionStorage).
import type { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { ANONYMOUS } from "../filters/authn";
import { CLIENT_SCRIPT } from "./client/index";
import { shellHtml } from "./shell";
import { STYLES } from "./styles";

/** What the browser may load and talk to: this origin only, no inline script. */
const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

function asset(body: string, type: string, status = 200): Response {
  return new Response(body, {
    status,
    headers: { "content-type": type, "cache-control": "no-cache", ...SECURITY_HEADERS },
  });
}

/**
 * Adds the dashboard's routes to the apiserver app. Mounted after authentication (so the
 * shell knows whether the request had credentials) and before authorization (the shell and
 * its assets hold no data; every API call the client makes is authorized as usual).
 */
export function mountDashboard(app: Hono<AppEnv>): void {
  const shell = shellHtml();
  // relative, so that a cluster's path prefix (/clusters/<name>/dashboard) is kept
  app.get("/dashboard", (c) => c.redirect(`dashboard/${c.get("url").search}`, 301));
  app.get("/dashboard/app.js", () => asset(CLIENT_SCRIPT, "text/javascript; charset=utf-8"));
  app.get("/dashboard/app.css", () => asset(STYLES, "text/css; charset=utf-8"));
  // every other path under /dashboard/ is the single-page app's shell (its routes live in the
  // URL's fragment, so these are only bookmarks of /dashboard/ itself)
  app.get("/dashboard/*", (c) => {
    const anonymous = c.get("user").name === ANONYMOUS.name;
    return asset(shell, "text/html; charset=utf-8", anonymous ? 401 : 200);
  });
  app.all(
    "/dashboard/*",
    () => new Response(null, { status: 405, headers: { allow: "GET, HEAD", ...SECURITY_HEADERS } }),
  );
}
