// certificates.k8s.io/v1 certificatesigningrequests: a PKCS#10 request for a certificate from a
// named signer, as upstream's registry keeps them (pkg/registry/certificates and
// pkg/apis/certificates/validation): the requester (spec.username, uid, groups, extra) is set
// by the server from who asked, whatever the client sent; a new request has no status; the
// spec never changes after create (an update keeps the stored one); the status subresource
// keeps the Approved and Denied conditions as they were and stamps the conditions' times.
// Validation: any name, a PEM "CERTIFICATE REQUEST" that parses (csr-request.ts), a qualified
// signerName, usages from the known set without repeats, expirationSeconds of 600 or more,
// well-formed conditions, and a status.certificate of CERTIFICATE blocks. Table: NAME AGE
// SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION, as `kubectl get csr` prints it. The
// approval subresource (`kubectl certificate approve|deny`) changes the conditions only, and
// may add Approved or Denied (never both, never removing one); who may approve for a signer is
// the CertificateApproval admission plugin's (workers/admission/certificates.ts), and the
// signers are durable-objects/controllers/certificates/.
import { field, type StatusCause } from "../errors";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import { rfc3339 } from "../time";
import type { KubeObject } from "../types";
import type { UserInfo } from "../user";
import { validateMeta } from "../validation/metadata";
import { isDNS1123Label, isDNS1123Subdomain } from "../validation/names";
import { ageColumn, column, humanDuration, isObject, nameColumn } from "./common";
import { certificateError, decodeBase64, goBytes, requestError } from "./csr-request";

/** upstream's allValidUsages, sorted as sets.String.List() gives them for NotSupported. */
export const KEY_USAGES = [
  "any",
  "cert sign",
  "client auth",
  "code signing",
  "content commitment",
  "crl sign",
  "data encipherment",
  "decipher only",
  "digital signature",
  "email protection",
  "encipher only",
  "ipsec end system",
  "ipsec tunnel",
  "ipsec user",
  "key agreement",
  "key encipherment",
  "microsoft sgc",
  "netscape sgc",
  "ocsp signing",
  "s/mime",
  "server auth",
  "signing",
  "timestamping",
];
const LEGACY_SIGNER = "kubernetes.io/legacy-unknown";
/** Condition types whose status may only be True. */
const TRUE_ONLY = new Set(["Approved", "Denied", "Failed"]);

type Conditions = { type?: string; status?: string; [k: string]: unknown }[];
const conditionsOf = (o: KubeObject | undefined): Conditions =>
  Array.isArray(o?.status?.conditions) ? o.status.conditions : [];
const ofType = (o: KubeObject | undefined, t: string) => conditionsOf(o).filter((c) => c.type === t);
const certificateOf = (o: KubeObject | undefined): string =>
  typeof o?.status?.certificate === "string" ? o.status.certificate : "";

/** upstream's ValidateSignerName: "<domain with a dot>/<path of subdomains>", up to 571 characters. */
export function validateSignerName(path: string, name: unknown): StatusCause[] {
  const signer = typeof name === "string" ? name : "";
  if (!signer) return [field.required(path)];
  const segments = signer.split("/");
  if (segments.length !== 2)
    return [
      field.invalid(
        path,
        signer,
        "must be a fully qualified domain and path of the form 'example.com/signer-name'",
      ),
    ];
  const [domain, rest] = segments;
  const causes: StatusCause[] = [];
  if (domain.length > 253) causes.push(field.tooLong(path, 253));
  const labels = domain.split(".");
  for (const label of labels) {
    const errs = isDNS1123Label(label);
    if (errs.length) {
      for (const m of errs) causes.push(field.invalid(path, domain, `validating label "${label}": ${m}`));
      break;
    }
  }
  if (labels.length < 2)
    causes.push(
      field.invalid(path, domain, "should be a domain with at least two segments separated by dots"),
    );
  for (const label of rest.split(".")) {
    const errs = isDNS1123Subdomain(label);
    if (errs.length) {
      for (const m of errs) causes.push(field.invalid(path, rest, `validating label "${label}": ${m}`));
      break;
    }
  }
  const max = 253 + (253 + 63 + 1) + 1;
  if (signer.length > max) causes.push(field.tooLong(path, max));
  return causes;
}

/** What upstream tolerates in an update because the stored object already had it. */
interface Options {
  allowSettingCertificate: boolean;
  allowLegacySignerName: boolean;
  allowBothApprovedAndDenied: boolean;
  allowDuplicateConditionTypes: boolean;
  allowEmptyConditionType: boolean;
  allowArbitraryCertificate: boolean;
  allowUnknownUsages: boolean;
  allowDuplicateUsages: boolean;
}

const usagesOf = (o: KubeObject | undefined): unknown[] =>
  Array.isArray(o?.spec?.usages) ? o.spec.usages : [];
const hasRepeat = (xs: unknown[]) => new Set(xs).size !== xs.length;

function optionsFor(obj: KubeObject, old: KubeObject | undefined, status: boolean): Options {
  const types = conditionsOf(old).map((c) => c.type);
  const oldCert = certificateOf(old);
  const oldCertBytes = decodeBase64(oldCert).bytes;
  return {
    allowSettingCertificate: status,
    allowLegacySignerName: old?.spec?.signerName === LEGACY_SIGNER,
    allowBothApprovedAndDenied: types.includes("Approved") && types.includes("Denied"),
    allowDuplicateConditionTypes: !!old && hasRepeat(types),
    allowEmptyConditionType: types.some((t) => !t),
    allowArbitraryCertificate:
      (!!old && certificateOf(obj) === oldCert) ||
      (!!old && (!oldCertBytes || certificateError(oldCertBytes) !== undefined)),
    allowUnknownUsages: usagesOf(old).some((u) => !KEY_USAGES.includes(String(u))),
    allowDuplicateUsages: hasRepeat(usagesOf(old)),
  };
}

function validateConditions(obj: KubeObject, opts: Options): StatusCause[] {
  const causes: StatusCause[] = [];
  const seen = new Set<unknown>();
  let approved = false;
  let denied = false;
  conditionsOf(obj).forEach((c, i) => {
    const p = `status.conditions[${i}]`;
    if (!opts.allowEmptyConditionType && !c.type) causes.push(field.required(`${p}.type`));
    const allowed = TRUE_ONLY.has(c.type ?? "") ? ["True"] : ["False", "True", "Unknown"];
    if (!c.status) causes.push(field.required(`${p}.status`));
    else if (!allowed.includes(c.status)) causes.push(field.notSupported(`${p}.status`, c.status, allowed));
    if (!opts.allowBothApprovedAndDenied) {
      const exclusive = "Approved and Denied conditions are mutually exclusive";
      if (c.type === "Approved") {
        approved = true;
        if (denied) causes.push(field.invalid(`${p}.type`, c.type, exclusive));
      } else if (c.type === "Denied") {
        denied = true;
        if (approved) causes.push(field.invalid(`${p}.type`, c.type, exclusive));
      }
    }
    if (!opts.allowDuplicateConditionTypes) {
      if (seen.has(c.type)) causes.push(field.duplicate(`${p}.type`, c.type));
      seen.add(c.type);
    }
  });
  return causes;
}

/** upstream's validateCertificateSigningRequest, for a create or an update's new object. */
function validateObject(obj: KubeObject, old: KubeObject | undefined, opts: Options): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: false, name: () => [] });
  const spec = isObject(obj.spec) ? obj.spec : {};
  const request = typeof spec.request === "string" ? decodeBase64(spec.request) : {};
  if (request.error)
    causes.push(field.invalidShown("spec.request", JSON.stringify(spec.request), request.error));
  else {
    const bytes = request.bytes ?? new Uint8Array();
    const why = requestError(bytes);
    if (why) causes.push(field.invalidShown("spec.request", goBytes(request.bytes), why));
  }
  const usages: unknown[] = Array.isArray(spec.usages) ? spec.usages : [];
  if (usages.length === 0) causes.push(field.required("spec.usages"));
  if (!opts.allowUnknownUsages)
    usages.forEach((u, i) => {
      if (!KEY_USAGES.includes(String(u)))
        causes.push(field.notSupported(`spec.usages[${i}]`, u, KEY_USAGES));
    });
  if (!opts.allowDuplicateUsages) {
    const seen = new Set<unknown>();
    usages.forEach((u, i) => {
      if (seen.has(u)) causes.push(field.duplicate(`spec.usages[${i}]`, u));
      seen.add(u);
    });
  }
  if (!opts.allowLegacySignerName && spec.signerName === LEGACY_SIGNER)
    causes.push(
      field.invalid(
        "spec.signerName",
        spec.signerName,
        "the legacy signerName is not allowed via this API version",
      ),
    );
  else causes.push(...validateSignerName("spec.signerName", spec.signerName));
  if (typeof spec.expirationSeconds === "number" && spec.expirationSeconds < 600)
    causes.push(
      field.invalid(
        "spec.expirationSeconds",
        spec.expirationSeconds,
        "may not specify a duration less than 600 seconds (10 minutes)",
      ),
    );
  causes.push(...validateConditions(obj, opts));
  if (!opts.allowArbitraryCertificate) {
    const cert = decodeBase64(certificateOf(obj));
    const why = cert.error ?? (cert.bytes ? certificateError(cert.bytes) : undefined);
    if (why) causes.push(field.invalid("status.certificate", "<certificate data>", why));
  }
  return causes;
}

/** upstream's ValidateCertificateSigningRequestApprovalUpdate: Approved and Denied may be added, not removed. */
function validateApproval(obj: KubeObject, old: KubeObject): StatusCause[] {
  const causes = validateObject(obj, old, optionsFor(obj, old, false));
  for (const t of ["Approved", "Denied"])
    if (ofType(obj, t).length < ofType(old, t).length)
      causes.push(field.forbidden("status.conditions", `updates may not remove a condition of type "${t}"`));
  return causes;
}

/** An approval update: the stored object with the conditions the client sent, their times stamped. */
function prepareApproval(obj: KubeObject, old: KubeObject): void {
  const conditions = obj.status?.conditions;
  obj.spec = old.spec;
  obj.status = { ...(old.status ?? {}) };
  if (conditions === undefined) delete obj.status.conditions;
  else obj.status.conditions = conditions;
  stampTimes(obj, old);
}

/** upstream's validateCertificateSigningRequestUpdate (main resource and status). */
function validateUpdate(obj: KubeObject, old: KubeObject, status: boolean): StatusCause[] {
  const causes = validateObject(obj, old, optionsFor(obj, old, status));
  for (const t of ["Approved", "Denied", "Failed"])
    if (ofType(obj, t).length < ofType(old, t).length)
      causes.push(field.forbidden("status.conditions", `updates may not remove a condition of type "${t}"`));
  for (const t of ["Approved", "Denied"]) {
    const before = ofType(old, t);
    const after = ofType(obj, t);
    if (after.length > before.length)
      causes.push(field.forbidden("status.conditions", `updates may not add a condition of type "${t}"`));
    else if (after.length === before.length && JSON.stringify(after) !== JSON.stringify(before))
      causes.push(field.forbidden("status.conditions", `updates may not modify a condition of type "${t}"`));
  }
  if (certificateOf(obj) !== certificateOf(old)) {
    if (!status)
      causes.push(field.forbidden("status.certificate", "updates may not set certificate content"));
    else if (certificateOf(old))
      causes.push(
        field.forbidden("status.certificate", "updates may not modify existing certificate content"),
      );
  }
  return causes;
}

/** The requester, from who asked: whatever the client put in these fields is replaced. */
function setRequester(obj: KubeObject, user: UserInfo | undefined): void {
  if (!isObject(obj.spec)) obj.spec = {};
  const spec = obj.spec;
  for (const k of ["username", "uid", "groups", "extra"]) delete spec[k];
  if (!user) return;
  if (user.name) spec.username = user.name;
  if (user.uid) spec.uid = user.uid;
  if (user.groups?.length) spec.groups = [...user.groups];
  if (user.extra && Object.keys(user.extra).length)
    spec.extra = Object.fromEntries(Object.entries(user.extra).map(([k, v]) => [k, [...v]]));
}

/** A status update keeps each Approved and Denied condition as stored, and stamps missing times. */
function prepareStatus(obj: KubeObject, old: KubeObject): void {
  const next = conditionsOf(obj);
  for (const t of ["Approved", "Denied"]) {
    const was = conditionsOf(old).filter((c) => c.type === t);
    const at = next.flatMap((c, i) => (c.type === t ? [i] : []));
    if (was.length !== at.length) continue; // added or removed: validation refuses it
    at.forEach((i, n) => {
      next[i] = was[n];
    });
  }
  stampTimes(obj, old);
}

/** upstream's populateConditionTimestamps: a condition's times, when it came without them. */
function stampTimes(obj: KubeObject, old: KubeObject): void {
  const now = rfc3339();
  for (const c of conditionsOf(obj)) {
    if (!c.lastUpdateTime) c.lastUpdateTime = now;
    if (!c.lastTransitionTime) {
      const same = conditionsOf(old).find(
        (o) => o.type === c.type && o.status === c.status && o.lastTransitionTime,
      );
      c.lastTransitionTime = same?.lastTransitionTime ?? now;
    }
  }
}

/** "Approved", "Denied,Failed", "Pending,Issued", ... as kubectl's CONDITION column. */
export function csrCondition(obj: KubeObject): string {
  const types = new Set(conditionsOf(obj).map((c) => c.type));
  let out = types.has("Denied") ? "Denied" : types.has("Approved") ? "Approved" : "Pending";
  if (types.has("Failed")) out += ",Failed";
  if (certificateOf(obj)) out += ",Issued";
  return out;
}

export const certificatesigningrequests: ResourceDef = {
  group: "certificates.k8s.io",
  version: "v1",
  resource: "certificatesigningrequests",
  kind: "CertificateSigningRequest",
  listKind: "CertificateSigningRequestList",
  singular: "certificatesigningrequest",
  namespaced: false,
  shortNames: ["csr"],
  verbs: STANDARD_VERBS,
  subresources: {
    status: { kind: "CertificateSigningRequest", verbs: ["get", "patch", "update"] },
    approval: { kind: "CertificateSigningRequest", verbs: ["get", "patch", "update"] },
  },
  strategy: {
    prepareForCreate: (obj, user) => {
      setRequester(obj, user);
      obj.status = {};
    },
    // the spec is the one stored at create; status comes from the stored object (generic path)
    prepareForUpdate: (obj, old) => {
      obj.spec = old.spec;
    },
    prepareForStatusUpdate: prepareStatus,
    prepareForSubresourceUpdate: { approval: prepareApproval },
    validate: (obj, old) =>
      old
        ? validateUpdate(obj, old, false)
        : validateObject(obj, undefined, optionsFor(obj, undefined, false)),
    validateSubresource: { status: (obj, old) => validateUpdate(obj, old, true), approval: validateApproval },
    columns: [
      nameColumn,
      ageColumn,
      column("SignerName", "string", "The signer the certificate is requested from.", (o) =>
        o.spec?.signerName ? o.spec.signerName : "<none>",
      ),
      column(
        "Requestor",
        "string",
        "Name of the user who created the request.",
        (o) => o.spec?.username ?? "",
      ),
      column(
        "RequestedDuration",
        "string",
        "The validity the request asks for (spec.expirationSeconds).",
        (o) =>
          typeof o.spec?.expirationSeconds === "number"
            ? humanDuration(o.spec.expirationSeconds * 1000)
            : "<none>",
      ),
      column("Condition", "string", "Approved, Denied or Pending; Failed and Issued when so.", csrCondition),
    ],
    fields: (o) => ({ "spec.signerName": String(o.spec?.signerName ?? "") }),
  },
};
