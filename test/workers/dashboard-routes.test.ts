// The dashboard's routes through real workerd: the shell is a 401 login page without
// credentials and 200 with good ones, a credential that does not check out is 401 as for any
// path, its assets are code (no data), other verbs are 405, and nothing under /dashboard/
// widens what anonymous may do elsewhere.
import { describe, expect, it } from "vitest";
import { api, shared } from "../helpers/cluster";

const t = shared();

async function raw(path: string, init: RequestInit = {}) {
  const res = await fetch(t.url + path, { redirect: "manual", ...init });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

describe("dashboard routes", () => {
  it("the shell: 401 login page without credentials, 200 with a token, 401 with a bad one", async () => {
    const anon = await raw("/dashboard/");
    expect(anon.status).toBe(401);
    expect(anon.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(anon.text).toContain('id="login-form"');
    expect(anon.text).toContain('<script src="app.js" defer></script>');
    expect(anon.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(anon.headers.get("x-content-type-options")).toBe("nosniff");

    const admin = await api(t, "GET", "/dashboard/");
    expect(admin.status).toBe(200);
    expect(admin.text).toBe(anon.text);

    const bad = await raw("/dashboard/", { headers: { authorization: "Bearer not-a-token" } });
    expect([bad.status, JSON.parse(bad.text).reason]).toEqual([401, "Unauthorized"]);

    // any path below is the same shell (the views live in the fragment)
    expect((await raw("/dashboard/pods/whatever")).status).toBe(401);
  });

  it("/dashboard redirects to /dashboard/, relative to keep a cluster's prefix", async () => {
    const r = await raw("/dashboard?x=1");
    expect(r.status).toBe(301);
    expect(r.headers.get("location")).toBe("dashboard/?x=1");
  });

  it("the script and the stylesheet are served to anyone, and hold no cluster data", async () => {
    const js = await raw("/dashboard/app.js");
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(() => new Function(js.text)).not.toThrow();
    expect(js.text).not.toContain(t.token);
    const css = await raw("/dashboard/app.css");
    expect([css.status, css.headers.get("content-type")]).toEqual([200, "text/css; charset=utf-8"]);
    expect(css.text).toContain("prefers-color-scheme: dark");
  });

  it("other verbs are 405; without credentials the API stays 401", async () => {
    const post = await raw("/dashboard/", { method: "POST", body: "x" });
    expect([post.status, post.headers.get("allow")]).toEqual([405, "GET, HEAD"]);
    const anonApi = await raw("/api/v1/namespaces");
    expect([anonApi.status, JSON.parse(anonApi.text).reason]).toEqual([401, "Unauthorized"]);
  });
});
