// A local certificate authority and the serving certificate for 127.0.0.1/localhost, made
// once per state dir with the openssl CLI. kubectl sends credentials only over TLS, so
// the local control plane speaks HTTPS (and plain HTTP on the same port for curl).
import { execFileSync } from "node:child_process";
import { createPrivateKey, X509Certificate } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

function openssl(args: string[], cwd: string) {
  execFileSync("openssl", args, { cwd, stdio: ["ignore", "ignore", "pipe"] });
}

/**
 * The serving certificate's names: the local addresses, and the names and address of the
 * `kubernetes` Service, which pods reach the front door by (through their node's relay).
 */
export function serverExtensions(serviceIP = "10.96.0.1", clusterDomain = "cluster.local") {
  const names = [
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    `kubernetes.default.svc.${clusterDomain}`,
  ];
  const san = ["IP:127.0.0.1", "DNS:localhost", "IP:::1", `IP:${serviceIP}`, ...names.map((n) => `DNS:${n}`)];
  return `subjectAltName=${san.join(",")}\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n`;
}

/**
 * Returns { caCert, cert, key } as PEM strings, creating them under <stateDir>/pki. A serving
 * certificate made for other names (an older state dir) is issued again by the same CA.
 */
export function ensurePki(
  stateDir: string,
  opts: { serviceIP?: string; clusterDomain?: string } = {},
): { caCert: string; cert: string; key: string } {
  const dir = join(stateDir, "pki");
  const files = { caCert: join(dir, "ca.crt"), cert: join(dir, "server.crt"), key: join(dir, "server.key") };
  const ext = serverExtensions(opts.serviceIP, opts.clusterDomain);
  const extFile = join(dir, "server.ext");
  const caReady = existsSync(files.caCert) && existsSync(join(dir, "ca.key"));
  if (caReady && existsSync(files.cert) && (!existsSync(extFile) || readFileSync(extFile, "utf8") !== ext)) {
    // same CA, new names: clients that trust the CA keep working
    writeFileSync(extFile, ext);
    issueServerCert(dir);
  }
  if (!Object.values(files).every((f) => existsSync(f))) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key"], dir);
    openssl(
      [
        "req",
        "-x509",
        "-new",
        "-key",
        "ca.key",
        "-sha256",
        "-days",
        "3650",
        "-subj",
        "/CN=edgeplane-local-ca",
        "-out",
        "ca.crt",
      ],
      dir,
    );
    openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "server.key"], dir);
    writeFileSync(extFile, ext);
    issueServerCert(dir);
  }
  return {
    caCert: readFileSync(files.caCert, "utf8"),
    cert: readFileSync(files.cert, "utf8"),
    key: readFileSync(files.key, "utf8"),
  };
}

/** The CA's key as PKCS#8 PEM (what WebCrypto imports): the Worker's CSR signers sign with it. */
export function caKeyPkcs8(stateDir: string): string {
  const key = createPrivateKey(readFileSync(join(stateDir, "pki", "ca.key")));
  return key.export({ type: "pkcs8", format: "pem" }).toString();
}

/** Signs server.key's certificate with the CA, for the names in server.ext. */
function issueServerCert(dir: string) {
  openssl(
    ["req", "-new", "-key", "server.key", "-subj", "/CN=edgeplane-apiserver", "-out", "server.csr"],
    dir,
  );
  openssl(
    [
      "x509",
      "-req",
      "-in",
      "server.csr",
      "-CA",
      "ca.crt",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-days",
      "3650",
      "-sha256",
      "-extfile",
      "server.ext",
      "-out",
      "server.crt",
    ],
    dir,
  );
}

/** The admin's client certificate: kubeadm's admin.conf user, in the masters group. */
export const ADMIN_CLIENT_SUBJECT = { cn: "kubernetes-admin", groups: ["system:masters"] };
/** issued for a year; issued again when less than a month is left */
const CLIENT_CERT_DAYS = 365;
const RENEW_BEFORE_MS = 30 * 24 * 3600 * 1000;

/** An openssl -subj for a user: the O values (groups), then the CN, each /-separator escaped. */
export function subjectArg(cn: string, groups: string[] = []): string {
  const esc = (v: string) => v.replace(/[\\/=+]/g, (c) => `\\${c}`);
  return [...groups.map((g) => `/O=${esc(g)}`), `/CN=${esc(cn)}`].join("");
}

/**
 * The admin's client certificate and key (PEM) under <stateDir>/pki (admin.crt, admin.key),
 * signed by the cluster CA for client authentication; made with the CA (ensurePki first), and
 * made again when it is missing or near its end.
 */
export function ensureAdminClientCert(stateDir: string): { cert: string; key: string } {
  const dir = join(stateDir, "pki");
  const cert = join(dir, "admin.crt");
  const key = join(dir, "admin.key");
  let fresh = existsSync(cert) && existsSync(key);
  if (fresh) {
    const until = Date.parse(new X509Certificate(readFileSync(cert)).validTo);
    fresh = until - Date.now() > RENEW_BEFORE_MS;
  }
  if (!fresh) {
    openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "admin.key"], dir);
    writeFileSync(
      join(dir, "client.ext"),
      "extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n",
    );
    const subj = subjectArg(ADMIN_CLIENT_SUBJECT.cn, ADMIN_CLIENT_SUBJECT.groups);
    openssl(["req", "-new", "-key", "admin.key", "-subj", subj, "-out", "admin.csr"], dir);
    openssl(
      [
        "x509",
        "-req",
        "-in",
        "admin.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        String(CLIENT_CERT_DAYS),
        "-sha256",
        "-extfile",
        "client.ext",
        "-out",
        "admin.crt",
      ],
      dir,
    );
  }
  return { cert: readFileSync(cert, "utf8"), key: readFileSync(key, "utf8") };
}
