// The CSR signing controller and cleaner (upstream pkg/controller/certificates/signer and
// cleaner), sample-controller style: a CertificateSigningRequest for one of the kubernetes.io
// signers (api/x509/signers.ts) that is approved, not failed and not yet issued is signed with
// the cluster CA, for the requested expirationSeconds bounded by the cluster signing duration
// (and never past the CA's end); one the signer does not accept is marked Failed
// (SignerValidationFailure). A denied request is never signed. Old requests are deleted:
// approved, denied or failed ones an hour after that condition, pending ones after a day,
// issued ones once their certificate has expired. A node's client certificate for a new agent
// (a join: asked by anyone but the node itself) first records that agent as the node's
// (api/node-binding.ts), which revokes the certificates of the agent it replaces.
import {
  certificateAgent,
  NODE_UID_ANNOTATION,
  newRecord,
  nodeOfCertificateUser,
  RECORD_NAMESPACE,
  recordAnnotations,
  recordName,
} from "../../../api/node-binding";
import { lookupGVR } from "../../../api/registry";
import type { KubeObject } from "../../../api/types";
import { DerError } from "../../../api/x509/der";
import { checkRequestSignature, parseCertificateRequest } from "../../../api/x509/request";
import { caFields, importCAKey, issueCertificate, type SigningCA } from "../../../api/x509/sign";
import { KUBELET_CLIENT, SIGNERS, signerRefusal } from "../../../api/x509/signers";
import { isAlreadyExists, isConflict, isNotFound } from "../lib/api-errors";
import type { Controller, ControllerContext } from "../runtime/controller";

const CSR = lookupGVR("certificates.k8s.io", "v1", "certificatesigningrequests")!;
const SECRETS = lookupGVR("", "v1", "secrets")!;
export const CSR_KEY = "certificates.k8s.io/certificatesigningrequests";

const HOUR = 3600_000;
/** upstream's --cluster-signing-duration default: a year */
export const DEFAULT_SIGNING_SECONDS = 365 * 24 * 3600;
/** how far back a certificate's validity starts (clock skew between machines), as upstream */
const BACKDATE_MS = 5 * 60_000;
const MIN_SECONDS = 600;

type Condition = { type?: string; status?: string; lastUpdateTime?: string };
const conditions = (csr: KubeObject): Condition[] =>
  Array.isArray(csr.status?.conditions) ? csr.status.conditions : [];
const has = (csr: KubeObject, type: string) =>
  conditions(csr).some((c) => c.type === type && c.status === "True");

const decode = (b64: string) => atob(b64.replace(/\s+/g, ""));

/** When the cleaner deletes `csr` (ms since the epoch). */
export function cleanupAt(csr: KubeObject): number {
  const created = Date.parse(csr.metadata.creationTimestamp ?? "") || Date.now();
  let at = Number.POSITIVE_INFINITY;
  for (const c of conditions(csr))
    if (["Approved", "Denied", "Failed"].includes(c.type ?? "") && c.status === "True")
      at = Math.min(at, (Date.parse(c.lastUpdateTime ?? "") || created) + HOUR);
  if (!conditions(csr).length) at = created + 24 * HOUR;
  const cert = csr.status?.certificate;
  if (typeof cert === "string" && cert) {
    try {
      at = Math.min(at, caFields(decode(cert)).notAfter);
    } catch {
      // not a certificate this reads: the other deadlines stand
    }
  }
  return at;
}

export interface SignerOptions {
  /** the cluster CA: its certificate and its key (PKCS#8 PEM) */
  caCert: string;
  caKey: string;
  /** --cluster-signing-duration in seconds (a year) */
  signingSeconds?: number;
}

/** Records `agent` as `node`'s one agent, not yet bound to a Node (the record's Node uid goes). */
async function recordCertificateAgent(node: string, agent: string, ctx: ControllerContext): Promise<void> {
  const name = await recordName(node);
  try {
    await ctx.api.create(SECRETS, newRecord(name, node, agent));
  } catch (e) {
    if (!isAlreadyExists(e)) throw e;
    // (a merge patch: the Node uid of the agent it replaces is removed)
    const annotations = { ...recordAnnotations(node, agent, ""), [NODE_UID_ANNOTATION]: null };
    await ctx.api.patch(SECRETS, RECORD_NAMESPACE, name, { metadata: { annotations } });
  }
}

/** The signing controller (with the cleaner), for a cluster CA. */
export function createCertificateSigner(opts: SignerOptions): Controller {
  let ca: Promise<SigningCA> | undefined;
  const loadCA = () => (ca ??= importCAKey(opts.caKey).then((key) => ({ ...caFields(opts.caCert), key })));
  const maxSeconds =
    opts.signingSeconds && opts.signingSeconds > 0 ? opts.signingSeconds : DEFAULT_SIGNING_SECONDS;

  async function writeStatus(csr: KubeObject, status: KubeObject["status"], ctx: ControllerContext) {
    try {
      await ctx.api.update(CSR, { ...structuredClone(csr), status }, "status");
    } catch (e) {
      // changed or deleted meanwhile: that change's event brings the key back
      if (isConflict(e) || isNotFound(e)) return;
      throw e;
    }
  }

  async function sign(csr: KubeObject, ctx: ControllerContext) {
    const signer = String(csr.spec?.signerName ?? "");
    if (!SIGNERS.includes(signer)) return; // another signer's (or nobody's)
    const usages: string[] = Array.isArray(csr.spec?.usages) ? csr.spec.usages : [];
    let refusal: string | undefined;
    let req: ReturnType<typeof parseCertificateRequest> | undefined;
    try {
      req = parseCertificateRequest(decode(String(csr.spec?.request ?? "")));
      refusal = (await checkRequestSignature(req)) ?? signerRefusal(signer, req, usages);
    } catch (e) {
      if (!(e instanceof DerError || e instanceof DOMException)) throw e;
      refusal = `unable to parse csr "${csr.metadata.name}": ${(e as Error).message}`;
    }
    if (refusal || !req) {
      const failed = {
        type: "Failed",
        status: "True",
        reason: "SignerValidationFailure",
        message: refusal,
        lastUpdateTime: new Date(ctx.now()).toISOString().replace(/\.\d+Z$/, "Z"),
      };
      return writeStatus(csr, { ...csr.status, conditions: [...conditions(csr), failed] }, ctx);
    }
    const asked = typeof csr.spec?.expirationSeconds === "number" ? csr.spec.expirationSeconds : maxSeconds;
    const seconds = Math.max(MIN_SECONDS, Math.min(asked, maxSeconds));
    const now = ctx.now();
    const notBefore = now - BACKDATE_MS;
    const node = nodeOfCertificateUser(req.names.commonName, req.names.organizations);
    if (signer === KUBELET_CLIENT && node && csr.spec?.username !== req.names.commonName)
      await recordCertificateAgent(node, certificateAgent(notBefore), ctx);
    const pemText = await issueCertificate(await loadCA(), req, {
      usages,
      notBefore,
      notAfter: now + seconds * 1000,
    });
    await writeStatus(csr, { ...csr.status, certificate: btoa(pemText) }, ctx);
  }

  return {
    name: "csrsigning",
    workers: 2,
    watches: { [CSR_KEY]: (csr) => [csr.metadata.name!] },
    resync: (ctx) => ctx.informers.keys(CSR_KEY),
    async sync(name, ctx) {
      const csr = ctx.informers.get(CSR_KEY, name);
      if (!csr || csr.metadata.deletionTimestamp) return;
      const due = cleanupAt(csr);
      if (due <= ctx.now()) {
        try {
          await ctx.api.remove(CSR, undefined, name);
        } catch (e) {
          if (!isNotFound(e)) throw e;
        }
        return;
      }
      // (looked at again by then, or sooner: a timer of weeks is not one to count on)
      if (due !== Number.POSITIVE_INFINITY) ctx.enqueue(name, Math.min(due - ctx.now(), 6 * HOUR));
      if (has(csr, "Approved") && !has(csr, "Failed") && !has(csr, "Denied") && !csr.status?.certificate)
        await sign(csr, ctx);
    },
  };
}
