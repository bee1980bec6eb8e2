// How edgelet authenticates to the control plane. A bootstrap token (`<6>.<16>` as
// kubeadm prints them) is exchanged for this node's own credential (system:node:<name>,
// group system:nodes) at POST /edgeplane/node-credentials, or, with --client-certificate, for
// a client certificate through a CertificateSigningRequest (node-certificate.ts, which rotates
// it); any other token is used as given.
// A node credential is short-lived: the agent renews it at ~80% of its life with the same
// call, authenticated by the credential itself (as kubelet rotates its client certificate),
// and keeps it in <root>/node-credential.json so that a restarted agent carries on as the same
// agent instead of joining again (which the control plane refuses while its Lease is fresh).
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Api, errorText, type Reply, sleep } from "./api";
import type { EdgeletConfig } from "./config";
import { requestNodeCertificate } from "./node-certificate";

export const NODE_CREDENTIAL_PATH = "/edgeplane/node-credentials";
export const CREDENTIAL_FILE = "node-credential.json";

export interface NodeCredentials {
  /** The current token (none with a client certificate); replaced in place by renewal. */
  token?: string;
  /** a client certificate and its key (PEM) */
  cert?: string;
  key?: string;
  /** Where the credential came from, for the logs. */
  source: "token-flag" | "bootstrap-exchange" | "stored-credential" | "certificate-signing-request";
  /** When a node credential expires (ms since the epoch); undefined for a token given as is. */
  expiresAt?: number;
}

type CredentialConfig = Pick<EdgeletConfig, "server" | "token" | "nodeName" | "ca" | "insecure" | "root"> & {
  clientCertificate?: boolean;
};

interface Stored {
  server: string;
  nodeName: string;
  token: string;
  expirationTimestamp: string;
}

const BOOTSTRAP_TOKEN = /^[a-z0-9]{6}\.[a-z0-9]{16}$/;

export function isBootstrapToken(token: string): boolean {
  return BOOTSTRAP_TOKEN.test(token);
}

function readStored(cfg: CredentialConfig): Stored | undefined {
  try {
    const s = JSON.parse(readFileSync(join(cfg.root, CREDENTIAL_FILE), "utf8")) as Stored;
    if (s.server !== cfg.server || s.nodeName !== cfg.nodeName || typeof s.token !== "string")
      return undefined;
    return Date.parse(s.expirationTimestamp) > Date.now() ? s : undefined;
  } catch {
    return undefined;
  }
}

/** Keeps the credential for a restart: owner-only, replaced atomically. Failing to is not fatal. */
function store(cfg: CredentialConfig, token: string, expirationTimestamp: string, log: (m: string) => void) {
  const file = join(cfg.root, CREDENTIAL_FILE);
  const body: Stored = { server: cfg.server, nodeName: cfg.nodeName, token, expirationTimestamp };
  try {
    mkdirSync(cfg.root, { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(body), { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, file);
  } catch (e) {
    log(`keeping the node credential in ${file} failed: ${(e as Error).message}`);
  }
}

/** A credential the control plane issued: the token, its expiry (ms) and its timestamp text. */
function issued(r: Reply): { token: string; expiresAt: number; expirationTimestamp: string } | undefined {
  const token = r.json?.token;
  if (r.status !== 201 || typeof token !== "string") return undefined;
  const stamp = r.json?.expirationTimestamp;
  const parsed = typeof stamp === "string" ? Date.parse(stamp) : Number.NaN;
  const expiresAt = Number.isFinite(parsed) ? parsed : Date.now() + 3600_000;
  return { token, expiresAt, expirationTimestamp: new Date(expiresAt).toISOString() };
}

/**
 * The node's credential: the token as given, the one kept from an earlier run (renewed at
 * once, which proves it still holds), or a bootstrap exchange. The control plane refuses an
 * exchange (409) while another agent holds the node: retried until that agent's Lease expires.
 */
export async function obtainCredentials(
  cfg: CredentialConfig,
  log: (m: string) => void = () => {},
): Promise<NodeCredentials> {
  if (!isBootstrapToken(cfg.token)) return { token: cfg.token, source: "token-flag" };
  if (cfg.clientCertificate) {
    const api = new Api({ server: cfg.server, token: cfg.token, ca: cfg.ca, insecure: cfg.insecure });
    try {
      return { ...(await requestNodeCertificate(api, cfg.nodeName)), source: "certificate-signing-request" };
    } finally {
      api.close();
    }
  }
  const kept = readStored(cfg);
  if (kept) {
    const api = new Api({ server: cfg.server, token: kept.token, ca: cfg.ca, insecure: cfg.insecure });
    try {
      const r = await api.request("POST", NODE_CREDENTIAL_PATH, { nodeName: cfg.nodeName });
      const got = issued(r);
      if (got) {
        store(cfg, got.token, got.expirationTimestamp, log);
        return { token: got.token, expiresAt: got.expiresAt, source: "stored-credential" };
      }
      log(`the kept node credential no longer holds (${errorText(r)}): joining with the bootstrap token`);
    } catch (e) {
      log(
        `renewing the kept node credential failed (${(e as Error).message}): joining with the bootstrap token`,
      );
    } finally {
      api.close();
    }
  }
  const api = new Api({ server: cfg.server, token: cfg.token, ca: cfg.ca, insecure: cfg.insecure });
  try {
    for (let delay = 1000; ; delay = Math.min(delay * 2, 10_000)) {
      const r = await api.request("POST", NODE_CREDENTIAL_PATH, { nodeName: cfg.nodeName });
      const got = issued(r);
      if (got) {
        store(cfg, got.token, got.expirationTimestamp, log);
        return { token: got.token, expiresAt: got.expiresAt, source: "bootstrap-exchange" };
      }
      if (r.status !== 409)
        throw new Error(`exchanging the bootstrap token for node credentials failed: ${errorText(r)}`);
      log(
        `joining as ${cfg.nodeName} refused for now: ${r.json?.message ?? errorText(r)}; retrying in ${delay} ms`,
      );
      await sleep(delay);
    }
  } finally {
    api.close();
  }
}

/**
 * Renews a node credential at ~80% of its life over the node's own connection and hands the
 * new token to every client (their next request carries it; open watches and the tunnel stay
 * up). A failed renewal is retried until the credential expires; a revoked one (401) is
 * reported and left alone: only a new join can make this agent the node's again.
 */
/** A client whose bearer token can be replaced. */
export interface TokenHolder {
  setToken(token: string): void;
}

/** Waits without holding the process open (an agent that failed to start still exits). */
function idle(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    t.unref();
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}

export class CredentialRenewer {
  private readonly abort = new AbortController();
  private loop?: Promise<void>;
  renewals = 0;

  private readonly clients: TokenHolder[];

  /** `api` renews (the node's own connection) and, with `others`, gets each new token. */
  constructor(
    private readonly cfg: CredentialConfig,
    private readonly creds: NodeCredentials,
    private readonly api: Api,
    private readonly log: (m: string) => void,
    others: TokenHolder[] = [],
  ) {
    this.clients = [api, ...others];
  }

  /** Another client of the node's that gets each renewed token (given the current one now). */
  add(client: TokenHolder): void {
    if (this.creds.token) client.setToken(this.creds.token);
    this.clients.push(client);
  }

  start(): void {
    if (this.creds.expiresAt === undefined || this.loop) return;
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    let failures = 0;
    let refused = false;
    while (!signal.aborted) {
      const left = (this.creds.expiresAt ?? 0) - Date.now();
      const wait =
        failures === 0 ? left * 0.8 : Math.min(2 ** failures * 500, 30_000, Math.max(left / 4, 500));
      await idle(Math.max(wait, 0), signal);
      if (signal.aborted) return;
      try {
        const r = await this.api.request("POST", NODE_CREDENTIAL_PATH, {
          nodeName: this.cfg.nodeName,
        });
        const got = issued(r);
        if (got && signal.aborted) {
          store(this.cfg, got.token, got.expirationTimestamp, this.log);
          return;
        }
        if (got) {
          this.creds.token = got.token;
          this.creds.expiresAt = got.expiresAt;
          for (const c of this.clients) c.setToken(got.token);
          store(this.cfg, got.token, got.expirationTimestamp, this.log);
          this.renewals++;
          failures = 0;
          refused = false;
          continue;
        }
        if (r.status === 401) {
          // revoked, or (rarely) the control plane could not check it: asked again until it expires
          if (Date.now() >= (this.creds.expiresAt ?? 0)) {
            this.log(
              `node credential EXPIRED before it could be renewed: this agent can no longer act for the node ${this.cfg.nodeName} (restart it to join again)`,
            );
            return;
          }
          if (!refused)
            this.log(
              `node credential REVOKED: the Node ${this.cfg.nodeName} was deleted or another agent joined as it; this agent can no longer act for the node (restart it to join again)`,
            );
          refused = true;
          failures++;
          continue;
        }
        throw new Error(errorText(r));
      } catch (e) {
        if (signal.aborted) return;
        failures++;
        this.log(`renewing the node credential failed: ${(e as Error).message}; retrying`);
      }
    }
  }

  /** Stops renewing; a renewal in flight is not waited for (its answer is only kept on disk). */
  async stop(): Promise<void> {
    this.abort.abort();
  }
}
