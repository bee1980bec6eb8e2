// Client certificates for tests, made with the openssl CLI: a key, and a certificate for a user
// (CN) and groups (O) signed by a CA's key (the cluster's, under <state>/pki, or a stranger's).
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { subjectArg } from "../../local-engine/pki";

export const hasOpenssl = (() => {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

const openssl = (args: string[], cwd: string) =>
  execFileSync("openssl", args, { cwd, stdio: ["ignore", "pipe", "pipe"] });

export interface Pem {
  cert: string;
  key: string;
}

/** A new CA (key and self-signed certificate), not the cluster's. */
export function strangerCA(name = "stranger-ca"): Pem {
  const dir = mkdtempSync(join(tmpdir(), "edgeplane-ca-"));
  try {
    openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key"], dir);
    openssl(
      ["req", "-x509", "-new", "-key", "ca.key", "-subj", `/CN=${name}`, "-days", "30", "-out", "ca.crt"],
      dir,
    );
    return {
      cert: readFileSync(join(dir, "ca.crt"), "utf8"),
      key: readFileSync(join(dir, "ca.key"), "utf8"),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The cluster CA of a state dir (written by local-engine/pki.ts). */
export function clusterCA(stateDir: string): Pem {
  const dir = join(stateDir, "pki");
  if (!existsSync(join(dir, "ca.key"))) throw new Error(`no CA under ${dir}`);
  return { cert: readFileSync(join(dir, "ca.crt"), "utf8"), key: readFileSync(join(dir, "ca.key"), "utf8") };
}

/** A PKCS#10 request (PEM) and its new key, for `cn` in `groups`. */
export function certificateRequest(cn: string, groups: string[] = []): { csr: string; key: string } {
  const dir = mkdtempSync(join(tmpdir(), "edgeplane-csr-"));
  try {
    openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "u.key"], dir);
    openssl(["req", "-new", "-key", "u.key", "-subj", subjectArg(cn, groups), "-out", "u.csr"], dir);
    return { csr: readFileSync(join(dir, "u.csr"), "utf8"), key: readFileSync(join(dir, "u.key"), "utf8") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A client certificate for `cn` in `groups`, signed by `ca`, valid for `days` from now (a
 * negative number: one that has expired).
 */
export function clientCert(ca: Pem, cn: string, groups: string[] = [], days = 30): Pem {
  const dir = mkdtempSync(join(tmpdir(), "edgeplane-cert-"));
  try {
    writeFileSync(join(dir, "ca.crt"), ca.cert);
    writeFileSync(join(dir, "ca.key"), ca.key, { mode: 0o600 });
    writeFileSync(join(dir, "ext"), "extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n");
    const { csr, key } = certificateRequest(cn, groups);
    writeFileSync(join(dir, "u.csr"), csr);
    openssl(
      [
        "x509",
        "-req",
        "-in",
        "u.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-set_serial",
        String(Date.now()),
        "-days",
        String(days),
        "-sha256",
        "-extfile",
        "ext",
        "-out",
        "u.crt",
      ],
      dir,
    );
    return { cert: readFileSync(join(dir, "u.crt"), "utf8"), key };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
