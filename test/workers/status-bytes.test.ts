// Error bodies byte for byte as kube-apiserver writes them: metav1.Status's Go field order,
// omitempty, encoding/json's escapes and its closing newline. Each expected body below is
// written out as upstream sends it, not built by the code under test.
import { beforeAll, describe, expect, it } from "vitest";
import { api, freshNamespace, shared } from "../helpers/cluster";

const t = shared();
let ns = "";
let saToken = "";

const JSON_CT = { "content-type": "application/json" };
const cm = (name: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, ...extra },
  data: { k: "v" },
});

beforeAll(async () => {
  ns = await freshNamespace(t, "bytes");
  expect((await api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, cm("taken"))).status).toBe(201);
  const sa = await api(t, "POST", `/api/v1/namespaces/${ns}/serviceaccounts`, {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: "nobody" },
  });
  expect(sa.status).toBe(201);
  const tr = await api(t, "POST", `/api/v1/namespaces/${ns}/serviceaccounts/nobody/token`, {
    apiVersion: "authentication.k8s.io/v1",
    kind: "TokenRequest",
    spec: {},
  });
  expect(tr.status, tr.text).toBe(201);
  saToken = tr.json.status.token;
});

const RFC1123 =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

interface Case {
  name: string;
  send: () => Promise<{ status: number; text: string }>;
  code: number;
  body: () => string;
}

const CASES: Case[] = [
  {
    name: "404 NotFound of a namespaced object",
    send: () => api(t, "GET", `/api/v1/namespaces/${ns}/configmaps/nope`),
    code: 404,
    body: () =>
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \\"nope\\" not found","reason":"NotFound","details":{"name":"nope","kind":"configmaps"},"code":404}\n',
  },
  {
    name: "404 NotFound of a cluster-scoped object",
    send: () => api(t, "GET", "/api/v1/namespaces/no-such-namespace"),
    code: 404,
    body: () =>
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"namespaces \\"no-such-namespace\\" not found","reason":"NotFound","details":{"name":"no-such-namespace","kind":"namespaces"},"code":404}\n',
  },
  {
    name: "404 NotFound of a cluster-scoped object of a named group",
    send: () => api(t, "GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/no-such-role"),
    code: 404,
    body: () =>
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"clusterroles.rbac.authorization.k8s.io \\"no-such-role\\" not found","reason":"NotFound","details":{"name":"no-such-role","group":"rbac.authorization.k8s.io","kind":"clusterroles"},"code":404}\n',
  },
  {
    name: "404 for a path nothing serves (details set, and empty)",
    send: () => api(t, "GET", "/apis/no.such.group/v1/things"),
    code: 404,
    body: () =>
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}\n',
  },
  {
    name: "409 AlreadyExists",
    send: () => api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, cm("taken")),
    code: 409,
    body: () =>
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \\"taken\\" already exists","reason":"AlreadyExists","details":{"name":"taken","kind":"configmaps"},"code":409}\n',
  },
  {
    name: "409 Conflict on a stale resourceVersion",
    send: () =>
      api(
        t,
        "PUT",
        `/api/v1/namespaces/${ns}/configmaps/taken`,
        cm("taken", { resourceVersion: "1" }),
        JSON_CT,
      ),
    code: 409,
    body: () =>
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Operation cannot be fulfilled on configmaps \\"taken\\": the object has been modified; please apply your changes to the latest version and try again","reason":"Conflict","details":{"name":"taken","kind":"configmaps"},"code":409}\n',
  },
  {
    name: "422 Invalid with causes",
    send: () => api(t, "POST", `/api/v1/namespaces/${ns}/configmaps`, cm("Bad_Name")),
    code: 422,
    body: () =>
      `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ConfigMap \\"Bad_Name\\" is invalid: metadata.name: Invalid value: \\"Bad_Name\\": ${RFC1123}","reason":"Invalid","details":{"name":"Bad_Name","kind":"ConfigMap","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: \\"Bad_Name\\": ${RFC1123}","field":"metadata.name"}]},"code":422}\n`,
  },
  {
    name: "403 Forbidden",
    send: () => api({ ...t, token: saToken }, "GET", `/api/v1/namespaces/${ns}/configmaps/taken`),
    code: 403,
    body: () =>
      `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \\"taken\\" is forbidden: User \\"system:serviceaccount:${ns}:nobody\\" cannot get resource \\"configmaps\\" in API group \\"\\" in the namespace \\"${ns}\\"","reason":"Forbidden","details":{"name":"taken","kind":"configmaps"},"code":403}\n`,
  },
  {
    name: "401 Unauthorized",
    send: () => api({ ...t, token: "not-a-token" }, "GET", "/api/v1/namespaces"),
    code: 401,
    body: () =>
      '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}\n',
  },
];

describe("Status bodies in upstream's bytes", () => {
  for (const c of CASES) {
    it(c.name, async () => {
      const r = await c.send();
      expect(r.status).toBe(c.code);
      expect(r.text).toBe(c.body());
    });
  }
});
