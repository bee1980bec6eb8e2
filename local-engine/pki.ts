// A local certificate authority and the serving certificate for 127.0.0.1/localhost, made
// once per state dir with the openssl CLI. kubectl sends credentials only over TLS, so
// the local control plane speaks HTTPS (and plain HTTP on the same port for curl).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

function openssl(args: string[], cwd: string) {
  execFileSync("openssl", args, { cwd, stdio: ["ignore", "ignore", "pipe"] });
}

/** Returns { caCert, cert, key } as PEM strings, creating them under <stateDir>/pki. */
export function ensurePki(stateDir: string): { caCert: string; cert: string; key: string } {
  const dir = join(stateDir, "pki");
  const files = { caCert: join(dir, "ca.crt"), cert: join(dir, "server.crt"), key: join(dir, "server.key") };
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
    openssl(
      ["req", "-new", "-key", "server.key", "-subj", "/CN=edgeplane-apiserver", "-out", "server.csr"],
      dir,
    );
    writeFileSync(
      join(dir, "server.ext"),
      "subjectAltName=IP:127.0.0.1,DNS:localhost,IP:::1\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n",
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
  return {
    caCert: readFileSync(files.caCert, "utf8"),
    cert: readFileSync(files.cert, "utf8"),
    key: readFileSync(files.key, "utf8"),
  };
}
