// Image pulls: imagePullPolicy, credentials from the pod's imagePullSecrets
// (kubernetes.io/dockerconfigjson and dockercfg), and the pull backoff that
// turns ErrImagePull into ImagePullBackOff.
import type { CriClient } from "../cri/client";
import { CriError } from "../cri/client";
import type { AuthConfig } from "../cri/types";
import { isObject as isRecord, type Pod, type PodContainer } from "../lib/kube-types";
import { type Api, enc } from "./api";
import { Backoff } from "./backoff";
import type { ImagePullRecords, PodCredential } from "./image-pulls";

/** The registry host of an image reference ("docker.io" when none is named). */
export function registryHost(image: string): string {
  const slash = image.indexOf("/");
  if (slash < 0) return "docker.io";
  const first = image.slice(0, slash);
  if (first.includes(".") || first.includes(":") || first === "localhost") return first;
  return "docker.io";
}

/** A docker config key ("https://index.docker.io/v1/", "http://h:5001", "h:5001/path") as a bare host. */
export function normalizeRegistryKey(key: string): string {
  let k = key.replace(/^[a-z]+:\/\//, "");
  k = k.split("/")[0] ?? k;
  if (k === "index.docker.io" || k === "registry-1.docker.io") return "docker.io";
  return k;
}

/** CRI AuthConfigs for `image` from docker config secrets. server_address is `http://host` as containerd 1.6 needs. */
export function authsFromSecrets(image: string, secrets: PullSecret[]): AuthConfig[] {
  return credentialsFromSecrets(image, secrets).map((c) => c.auth);
}

/** The parts of a v1 Secret a pull reads. */
export interface PullSecret {
  type?: string;
  data?: Record<string, string>;
  metadata?: { namespace?: string; name?: string; uid?: string };
}

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/** The registries of a docker config secret's JSON by key; undefined when it holds none. */
function dockerConfig(s: PullSecret): Record<string, unknown> | undefined {
  let cfg: unknown;
  if (s.type === "kubernetes.io/dockerconfigjson" || s.data?.[".dockerconfigjson"]) {
    const doc: unknown = JSON.parse(
      Buffer.from(s.data?.[".dockerconfigjson"] ?? "", "base64").toString("utf8"),
    );
    cfg = isRecord(doc) ? doc.auths : undefined;
  } else if (s.type === "kubernetes.io/dockercfg" || s.data?.[".dockercfg"]) {
    cfg = JSON.parse(Buffer.from(s.data?.[".dockercfg"] ?? "", "base64").toString("utf8"));
  }
  return isRecord(cfg) ? cfg : undefined;
}

/** authsFromSecrets, each with the secret it came from (what a pull record keeps of it). */
export function credentialsFromSecrets(image: string, secrets: PullSecret[]): PodCredential[] {
  const host = registryHost(image);
  const out: PodCredential[] = [];
  for (const s of secrets) {
    let cfg: Record<string, unknown> | undefined;
    try {
      cfg = dockerConfig(s);
    } catch {
      continue;
    }
    for (const [key, entry] of Object.entries(cfg ?? {})) {
      if (normalizeRegistryKey(key) !== host || !isRecord(entry)) continue;
      let username = str(entry.username);
      let password = str(entry.password);
      const encoded = str(entry.auth);
      if ((!username || !password) && encoded) {
        const dec = Buffer.from(encoded, "base64").toString("utf8");
        const i = dec.indexOf(":");
        username = dec.slice(0, i);
        password = dec.slice(i + 1);
      }
      const auth: AuthConfig = {
        username,
        password,
        server_address: `http://${host}`,
        ...(str(entry.identitytoken) ? { identity_token: str(entry.identitytoken) } : {}),
        ...(str(entry.registrytoken) ? { registry_token: str(entry.registrytoken) } : {}),
      };
      const m = s.metadata ?? {};
      out.push({ auth, secret: { namespace: m.namespace ?? "", name: m.name ?? "", uid: m.uid ?? "" } });
    }
  }
  return out;
}

export type PullOutcome =
  | {
      ok: true;
      imageRef: string;
      /** for the pod's flow trace: present already, or pulled (how long, how many bytes) */
      cached?: boolean;
      pullMs?: number;
      bytes?: number;
    }
  | { ok: false; reason: string; message: string };

export class ImageManager {
  readonly backoff: Backoff;
  private sandboxChecked?: { image: string; at: number };

  constructor(
    private readonly cri: CriClient,
    private readonly api: Api,
    private readonly events: (
      pod: Pod,
      type: string,
      reason: string,
      message: string,
      fieldPath?: string,
    ) => void,
    backoff?: Backoff,
    /** which credentials pulled each image (image-pulls.ts); without it cached images are not verified */
    private readonly records?: ImagePullRecords,
  ) {
    this.backoff = backoff ?? new Backoff();
  }

  /** The pod's pull secrets (missing ones are skipped, as upstream does). */
  async pullSecrets(pod: Pod): Promise<PullSecret[]> {
    const out: PullSecret[] = [];
    for (const ref of pod.spec?.imagePullSecrets ?? []) {
      if (!ref?.name) continue;
      const r = await this.api.get(
        `/api/v1/namespaces/${enc(pod.metadata.namespace)}/secrets/${enc(ref.name)}`,
      );
      if (r.status === 200 && r.json) out.push(r.json as PullSecret); // a GET of a Secret answers with it
    }
    return out;
  }

  private async present(image: string): Promise<string | undefined> {
    const st = await this.cri.imageStatus(image);
    return st.image ? st.image.id : undefined;
  }

  /** Pulls with each matching credential, then anonymously; returns the image ref (nothing recorded). */
  async pull(image: string, auths: AuthConfig[]): Promise<string> {
    let last: unknown;
    for (const auth of [...auths, undefined]) {
      try {
        return await this.cri.pullImage(image, auth);
      } catch (e) {
        last = e;
      }
    }
    throw last;
  }

  /**
   * Pulls with each of the pod's credentials, then anonymously, and records which one did it
   * (none: anonymously), so that later pods are held to the same credentials.
   */
  private async pullWith(
    image: string,
    creds: PodCredential[],
  ): Promise<{ ref: string; used?: PodCredential }> {
    this.records?.intend(image);
    let last: unknown;
    for (const cred of [...creds, undefined]) {
      let ref: string;
      try {
        ref = await this.cri.pullImage(image, cred?.auth);
      } catch (e) {
        last = e;
        continue;
      }
      this.records?.recordPull(image, ref, cred);
      return { ref, used: cred };
    }
    throw last;
  }

  /** Makes `container.image` present per its pull policy. */
  async ensure(pod: Pod, container: PodContainer, fieldPath: string): Promise<PullOutcome> {
    const image = container.image ?? "";
    const policy: string =
      container.imagePullPolicy ??
      (/:[^/]+$/.test(image) && !image.endsWith(":latest") ? "IfNotPresent" : "Always");
    const key = `${pod.metadata.uid}/${image}`;
    // the pod's credentials for this image, read once, and only when needed
    let creds: Promise<PodCredential[]> | undefined;
    const podCreds = () => {
      creds ??= this.pullSecrets(pod).then((secrets) => credentialsFromSecrets(image, secrets));
      return creds;
    };
    if (policy !== "Always") {
      const id = await this.present(image);
      // a cached image pulled with credentials is for pods with those credentials only
      // (imagePullCredentialsVerificationPolicy NeverVerifyPreloadedImages): others pull it
      // again with their own, and the registry decides
      const mayUse = id && (!this.records || (await this.records.mayUse(image, id, podCreds)));
      if (id && mayUse) {
        this.events(
          pod,
          "Normal",
          "Pulled",
          `Container image "${image}" already present on machine`,
          fieldPath,
        );
        return { ok: true, imageRef: id, cached: true };
      }
      if (id && policy === "Never") {
        const message = `Container image "${image}" is present with pull policy of Never but does not have the proper auth (image secret) that was used to pull the image`;
        this.events(pod, "Warning", "ErrImageNeverPull", message, fieldPath);
        return { ok: false, reason: "ErrImageNeverPull", message };
      }
      if (policy === "Never") {
        const message = `Container image "${image}" is not present with pull policy of Never`;
        this.events(pod, "Warning", "ErrImageNeverPull", message, fieldPath);
        return { ok: false, reason: "ErrImageNeverPull", message };
      }
    }
    if (this.backoff.inBackoff(key)) {
      const message = `Back-off pulling image "${image}"`;
      return { ok: false, reason: "ImagePullBackOff", message };
    }
    this.events(pod, "Normal", "Pulling", `Pulling image "${image}"`, fieldPath);
    const started = Date.now();
    try {
      const { ref } = await this.pullWith(image, await podCreds());
      this.backoff.reset(key);
      this.events(
        pod,
        "Normal",
        "Pulled",
        `Successfully pulled image "${image}" in ${Date.now() - started}ms`,
        fieldPath,
      );
      const pullMs = Date.now() - started;
      const bytes = await this.cri
        .imageStatus(ref)
        .then((s) => Number(s.image?.size) || undefined)
        .catch(() => undefined);
      return { ok: true, imageRef: ref, cached: false, pullMs, bytes };
    } catch (e) {
      this.backoff.next(key);
      const detail = e instanceof CriError ? e.details : (e as Error).message;
      const message = `Failed to pull image "${image}": ${detail}`;
      this.events(pod, "Warning", "Failed", message, fieldPath);
      return { ok: false, reason: "ErrImagePull", message };
    }
  }

  /** Pre-pulls the sandbox image, with the pod's credentials when it needs them. */
  async ensureSandboxImage(image: string, pod?: Pod): Promise<void> {
    // the sandbox image rarely goes away: trust a check for a minute
    if (this.sandboxChecked?.image === image && Date.now() - this.sandboxChecked.at < 60_000) return;
    if (await this.present(image)) {
      this.sandboxChecked = { image, at: Date.now() };
      return;
    }
    const auths = pod ? authsFromSecrets(image, await this.pullSecrets(pod)) : [];
    await this.pull(image, auths);
  }
}
