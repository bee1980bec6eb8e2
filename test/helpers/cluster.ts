// Test access to a running control plane: raw HTTP with the admin token, and real kubectl.
import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { promisify } from "node:util";
import { expect, inject } from "vitest";

const run = promisify(execFile);
export const KUBECTL = process.env.KUBECTL ?? "/usr/bin/kubectl";
export const hasKubectl = existsSync(KUBECTL);
if (!hasKubectl) console.warn(`SKIPPED: kubectl tests: ${KUBECTL} not found (CI installs it)`);

export interface Target {
  url: string;
  token: string;
  kubeconfigPath: string;
}

export function shared(): Target {
  return inject("server");
}

export async function api(
  t: Target,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const init: RequestInit = {
    method,
    headers: {
      authorization: `Bearer ${t.token}`,
      ...(body !== undefined && typeof body !== "string" ? { "content-type": "application/json" } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  };
  const res = await fetch(t.url + path, init);
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text, headers: res.headers };
}

export async function kubectl(
  t: Target,
  args: string[],
  opts: { input?: string; env?: Record<string, string> } = {},
) {
  if (opts.input !== undefined) {
    return new Promise<{ stdout: string; stderr: string; code: number }>((resolve) => {
      const p = spawn(KUBECTL, ["--kubeconfig", t.kubeconfigPath, ...args], {
        env: { ...process.env, ...opts.env },
      });
      let stdout = "";
      let stderr = "";
      p.stdout.on("data", (d) => (stdout += d));
      p.stderr.on("data", (d) => (stderr += d));
      p.on("close", (code) => resolve({ stdout, stderr, code: code ?? -1 }));
      p.stdin.end(opts.input);
    });
  }
  try {
    const { stdout, stderr } = await run(KUBECTL, ["--kubeconfig", t.kubeconfigPath, ...args], {
      env: { ...process.env, ...opts.env },
      maxBuffer: 64 << 20,
    });
    return { stdout, stderr, code: 0 };
  } catch (e: any) {
    return {
      stdout: e.stdout ?? "",
      stderr: e.stderr ?? String(e),
      code: typeof e.code === "number" ? e.code : 1,
    };
  }
}

/** A namespace unique to a test, created through the API. */
export async function freshNamespace(t: Target, prefix = "t"): Promise<string> {
  const name = `${prefix}-${Math.random().toString(36).slice(2, 8)}`;
  const r = await api(t, "POST", "/api/v1/namespaces", {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name },
  });
  if (r.status !== 201) throw new Error(`namespace create failed: ${r.status} ${r.text}`);
  return name;
}

/** Polls fn until it gives a truthy value (errors count as not yet); throws after ms. */
export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  ms = 15000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${last}` : ""}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** The ConfigMap the root CA publisher keeps in every namespace, as upstream's controller manager does. */
export const ROOT_CA_MAP = "kube-root-ca.crt";

/** Objects of a list other than kube-root-ca.crt (which comes back as soon as it is deleted). */
export const notRootCA = (o: any): boolean => o?.metadata?.name !== ROOT_CA_MAP;

/** Waits until ns holds kube-root-ca.crt, so that a list of its ConfigMaps surely includes it. */
export async function rootCAIn(t: Target, ns: string): Promise<void> {
  await until(`${ROOT_CA_MAP} in ${ns}`, async () => {
    const r = await api(t, "GET", `/api/v1/namespaces/${ns}/configmaps/${ROOT_CA_MAP}`);
    return r.status === 200;
  });
}

/** The causes of a 422 Invalid answer as "field: message" lines (fails the test on any other status). */
export function causes(r: { status: number; text: string; json: any }): string[] {
  expect(r.status, r.text).toBe(422);
  return (r.json.details.causes as any[]).map((c) => `${c.field}: ${c.message}`);
}
