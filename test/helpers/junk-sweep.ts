// The served routes (from discovery) crossed with methods and junk bodies or queries, and a
// checker that every answer is below 500 and every error a metav1.Status.
import { api, type Target } from "./cluster";

export interface Route {
  base: string;
  res: string;
  sub?: string;
  namespaced: boolean;
}

export interface JunkRequest {
  method: string;
  path: string;
  body?: string;
  ct?: string;
}

const JUNK: Array<[string, string]> = [
  ["{", "application/json"],
  ["[]", "application/json"],
  ['"x"', "application/json"],
  ["null", "application/json"],
  ['{"metadata":{"name":5,"labels":"x"},"spec":7,"status":[]}', "application/json"],
  ['{"apiVersion":"v1","kind":"Nope","metadata":{"name":"sweep"}}', "application/json"],
  ["\u0000\u00ff\ufffe\u0001 binary", "application/json"],
  [`${"[".repeat(5000)}${"]".repeat(5000)}`, "application/json"],
  ["a: [b\n", "application/yaml"],
  ["- 1\n- 2\n", "application/yaml"],
  ["&a [*a]", "application/yaml"],
];
const JUNK_QUERIES = [
  "limit=-x",
  "labelSelector=%3D%3D",
  "fieldSelector=x",
  "resourceVersion=abc",
  "timeoutSeconds=soon",
];
const PATCH_TYPES = [
  "application/merge-patch+json",
  "application/json-patch+json",
  "application/strategic-merge-patch+json",
  "application/apply-patch+yaml",
];

/** Every resource and subresource of /api/v1 and each /apis group-version. */
export async function servedRoutes(t: Target): Promise<Route[]> {
  const groups = await api(t, "GET", "/apis");
  if (groups.status !== 200) throw new Error(`/apis: ${groups.status}`);
  const versions = [
    "/api/v1",
    ...groups.json.groups.flatMap((g: any) => g.versions.map((v: any) => `/apis/${v.groupVersion}`)),
  ];
  const routes: Route[] = [];
  for (const v of versions) {
    const list = await api(t, "GET", v);
    if (list.status !== 200) throw new Error(`${v}: ${list.status}`);
    for (const r of list.json.resources) {
      const [res, sub] = r.name.split("/");
      routes.push({ base: v, res, sub, namespaced: r.namespaced });
    }
  }
  return routes;
}

/**
 * Collection and (missing) item paths of each route x GET/POST/PUT/PATCH/DELETE, junk rotated
 * through. A collection DELETE only ever carries an unparseable body and dryRun=All: the sweep
 * must never turn into a real deletecollection on the shared server.
 */
export function junkRequests(routes: Route[], ns: string): JunkRequest[] {
  const out: JunkRequest[] = [];
  let i = 0;
  for (const r of routes) {
    const scope = r.namespaced ? `${r.base}/namespaces/${ns}` : r.base;
    const item =
      r.res === "namespaces" && !r.sub
        ? `${r.base}/namespaces/sweep-missing`
        : `${scope}/${r.res}/sweep-missing`;
    const paths = r.sub ? [`${item}/${r.sub}`] : [`${scope}/${r.res}`, item];
    for (const path of paths) {
      const isCollection = !r.sub && path.endsWith(`/${r.res}`);
      for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE"]) {
        const [body, ct] = JUNK[i++ % JUNK.length];
        if (method === "GET") {
          out.push({ method, path: `${path}?${JUNK_QUERIES[i % JUNK_QUERIES.length]}` });
        } else if (method === "DELETE") {
          out.push({
            method,
            path: isCollection ? `${path}?dryRun=All` : path,
            body: isCollection ? (i % 2 ? "{" : "\u0000junk") : body,
            ct: "application/json",
          });
        } else if (method === "PATCH") {
          out.push({ method, path, body, ct: PATCH_TYPES[i % PATCH_TYPES.length] });
        } else {
          out.push({ method, path, body, ct });
        }
      }
    }
  }
  return out;
}

/** Sends the requests (a few at a time); returns one line per answer that breaks the rules. */
export async function sweep(t: Target, requests: JunkRequest[], parallel = 6): Promise<string[]> {
  const violations: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < requests.length) {
      const q = requests[next++];
      const label = `${q.method} ${q.path}${q.ct ? ` [${q.ct}] ${JSON.stringify(q.body).slice(0, 40)}` : ""}`;
      let status: number;
      let text: string;
      try {
        const res = await fetch(t.url + q.path, {
          method: q.method,
          headers: { authorization: `Bearer ${t.token}`, ...(q.ct ? { "content-type": q.ct } : {}) },
          body: q.body,
          signal: AbortSignal.timeout(15_000),
        });
        status = res.status;
        text = await res.text();
      } catch (e) {
        violations.push(`${label}: ${(e as Error).message}`);
        continue;
      }
      if (status >= 500) {
        violations.push(`${label}: ${status} ${text.slice(0, 200)}`);
        continue;
      }
      if (status < 400) continue;
      let s: any;
      try {
        s = JSON.parse(text);
      } catch {
        violations.push(`${label}: ${status} not JSON: ${text.slice(0, 100)}`);
        continue;
      }
      const ok =
        s?.kind === "Status" &&
        s.apiVersion === "v1" &&
        s.status === "Failure" &&
        s.code === status &&
        typeof s.reason === "string" &&
        s.reason.length > 0 &&
        typeof s.message === "string";
      if (!ok) violations.push(`${label}: ${status} not a Status: ${text.slice(0, 160)}`);
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return violations;
}
