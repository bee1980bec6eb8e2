// Which credentials pulled each image this node holds, so that a pod may use a cached image
// only with credentials that could have pulled it (upstream's KEP-2535, kubelet 1.33, with
// imagePullCredentialsVerificationPolicy NeverVerifyPreloadedImages):
//
//   <dir>/pulled/<sha256 of the image ref>.json  one per image the agent pulled: for each
//       repository (the image name without tag or digest) it was pulled as, whether it came
//       without credentials (any pod may use it) and the credentials that pulled it, each as
//       the secret it came from (namespace, name, uid) and a keyed hash of its content
//   <dir>/pulling/<sha256 of the image>.json     written before a pull, removed once its
//       record is written: an image found present with one of these, but no record, was
//       pulled by the agent under credentials nobody wrote down, and is verified again
//   <dir>/key                                    the node's random key for those hashes
//
// An image present with neither was not pulled by the agent (preloaded): it is not verified.
// No secret is ever written here: hashes are HMAC-SHA256 under the node's key, so a record
// that leaks tells nothing about the credentials.
import { createHash, createHmac, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AuthConfig } from "../cri/types";

/** A credential a pod offers for an image: the AuthConfig and the secret it was read from. */
export interface PodCredential {
  auth: AuthConfig;
  secret: { namespace: string; name: string; uid: string };
}

interface RecordedSecret {
  namespace: string;
  name: string;
  uid: string;
  hash: string;
}

interface RepoCredentials {
  /** pulled without credentials: every pod on the node may use it */
  anonymous?: boolean;
  secrets?: RecordedSecret[];
}

export interface PulledRecord {
  imageRef: string;
  /** repository (image without tag or digest) -> what pulled it as that name */
  repos: Record<string, RepoCredentials>;
}

/** Past this many secrets per repository, a match found by hash alone is not added (as upstream's limit). */
const MAX_SECRETS = 100;

/** The image's repository: its name without a tag or a digest. */
export function repositoryOf(image: string): string {
  const at = image.indexOf("@");
  const name = at >= 0 ? image.slice(0, at) : image;
  const slash = name.lastIndexOf("/");
  const colon = name.lastIndexOf(":");
  return colon > slash ? name.slice(0, colon) : name;
}

const fileName = (s: string) => `${createHash("sha256").update(s).digest("hex")}.json`;

export class ImagePullRecords {
  private key?: Buffer;

  constructor(private readonly dir: string) {}

  private keyOf(): Buffer {
    if (this.key) return this.key;
    const path = join(this.dir, "key");
    try {
      this.key = readFileSync(path);
    } catch {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      const fresh = randomBytes(32);
      try {
        writeFileSync(path, fresh, { mode: 0o600, flag: "wx" });
        this.key = fresh;
      } catch {
        this.key = readFileSync(path); // another writer made it first
      }
    }
    return this.key;
  }

  /** The keyed hash of a credential's content (never the content itself). */
  hashOf(auth: AuthConfig): string {
    const content = JSON.stringify([
      auth.server_address ?? "",
      auth.username ?? "",
      auth.password ?? "",
      auth.auth ?? "",
      auth.identity_token ?? "",
      auth.registry_token ?? "",
    ]);
    return createHmac("sha256", this.keyOf()).update(content).digest("hex");
  }

  private readJson<T>(path: string): T | undefined {
    try {
      return JSON.parse(readFileSync(path, "utf8")) as T;
    } catch {
      return undefined;
    }
  }

  private writeJson(sub: string, name: string, value: unknown): void {
    const dir = join(this.dir, sub);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const tmp = join(dir, `.${name}.${process.pid}.tmp`);
    writeFileSync(tmp, JSON.stringify(value), { mode: 0o600 });
    renameSync(tmp, join(dir, name));
  }

  pulled(imageRef: string): PulledRecord | undefined {
    return this.readJson<PulledRecord>(join(this.dir, "pulled", fileName(imageRef)));
  }

  /** Before a pull: the image is being pulled by the agent. */
  intend(image: string): void {
    this.writeJson("pulling", fileName(image), { image });
  }

  intended(image: string): boolean {
    return this.readJson(join(this.dir, "pulling", fileName(image))) !== undefined;
  }

  /**
   * After a pull of `image` that gave `imageRef`: with `used` (the credential that pulled it)
   * or without credentials (undefined). Then the intent goes.
   */
  recordPull(image: string, imageRef: string, used: PodCredential | undefined): void {
    this.merge(image, imageRef, used);
    rmSync(join(this.dir, "pulling", fileName(image)), { force: true });
  }

  private merge(image: string, imageRef: string, used: PodCredential | undefined): void {
    const record = this.pulled(imageRef) ?? { imageRef, repos: {} };
    const repo = repositoryOf(image);
    const entry = (record.repos[repo] ??= {});
    if (!used) {
      if (entry.anonymous) return;
      entry.anonymous = true;
    } else {
      const s: RecordedSecret = { ...used.secret, hash: this.hashOf(used.auth) };
      const list = (entry.secrets ??= []);
      if (
        list.some(
          (r) => r.hash === s.hash && r.uid === s.uid && r.name === s.name && r.namespace === s.namespace,
        )
      )
        return;
      // a secret updated in place replaces what it held before
      entry.secrets = [
        ...list.filter((r) => !(r.uid === s.uid && r.name === s.name && r.namespace === s.namespace)),
        s,
      ];
    }
    this.writeJson("pulled", fileName(imageRef), record);
  }

  /**
   * Whether a pod offering `offered` may use `image` (present as `imageRef`) without pulling it
   * again: an image the agent did not pull (preloaded) or pulled without credentials, yes;
   * one it pulled with credentials, only if the pod offers the same credentials (by content)
   * or the same secret (by namespace, name and uid). `offered` is read only when needed.
   */
  async mayUse(image: string, imageRef: string, offered: () => Promise<PodCredential[]>): Promise<boolean> {
    const record = this.pulled(imageRef);
    if (!record) return !this.intended(image);
    const entry = record.repos[repositoryOf(image)];
    if (!entry) return false;
    if (entry.anonymous) return true;
    const recorded = entry.secrets ?? [];
    if (!recorded.length) return false;
    for (const c of await offered()) {
      const hash = this.hashOf(c.auth);
      const byHash = recorded.some((r) => r.hash === hash);
      const bySecret = recorded.some(
        (r) => r.uid === c.secret.uid && r.name === c.secret.name && r.namespace === c.secret.namespace,
      );
      if (byHash || bySecret) {
        // remember this secret too, so that it matches by its coordinates from now on
        if (!(byHash && bySecret) && recorded.length < MAX_SECRETS) this.merge(image, imageRef, c);
        return true;
      }
    }
    return false;
  }
}
