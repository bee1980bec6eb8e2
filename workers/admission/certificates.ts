// The certificates admission plugins (upstream plugin/pkg/admission/certificates), on
// certificates.k8s.io/v1 CertificateSigningRequests:
// - CertificateApproval: an update of the approval subresource needs the `approve` verb on
//   the request's signer (resource `signers` of certificates.k8s.io, named by the signerName or
//   by "<domain>/*");
// - CertificateSigning: a status update that sets or changes the certificate needs `sign`;
// - CertificateSubjectRestriction: a request to kubernetes.io/kube-apiserver-client for a
//   certificate in the group system:masters is refused, whoever asks.
import type { UserInfo } from "../../api/user";
import { DerError } from "../../api/x509/der";
import { parseCertificateRequest } from "../../api/x509/request";
import { KUBE_APISERVER_CLIENT } from "../../api/x509/signers";
import type { Env } from "../../durable-objects/env";
import { authorizationModes, authorize } from "../authz/chain";
import type { AdmissionAttributes, AdmissionPlugin } from "./index";
import { admissionForbidden } from "./util";

const GROUP = "certificates.k8s.io";

/** upstream's IsAuthorizedForSignerName: the exact signer, or every signer of its domain. */
export async function authorizedForSigner(user: UserInfo, verb: string, signer: string, env: Env) {
  const ask = (name: string) =>
    authorize(
      authorizationModes(env),
      {
        user,
        verb,
        apiGroup: GROUP,
        apiVersion: "*",
        resource: "signers",
        subresource: "",
        namespace: "",
        name,
        path: "",
        isResourceRequest: true,
      },
      env,
    );
  if ((await ask(signer)).decision === "allow") return true;
  const domain = signer.split("/")[0];
  return (await ask(`${domain}/*`)).decision === "allow";
}

const isCSR = (a: AdmissionAttributes) =>
  a.w.def.group === GROUP && a.w.def.resource === "certificatesigningrequests";

/** The group system:masters in a request's subject (its PEM is in spec.request, base64). */
function asksForMasters(request: unknown): boolean {
  if (typeof request !== "string") return false;
  try {
    const req = parseCertificateRequest(atob(request.replace(/\s+/g, "")));
    return req.names.organizations.includes("system:masters");
  } catch (e) {
    if (e instanceof DerError || e instanceof DOMException) return false; // validation answers it
    throw e;
  }
}

export const certificatesAdmission: AdmissionPlugin = {
  name: "CertificateApproval+CertificateSigning+CertificateSubjectRestriction",
  async validate(a) {
    if (!isCSR(a) || !a.object) return;
    const signer = String(a.object.spec?.signerName ?? "");
    const user = a.w.c.get("user") as UserInfo;
    const env = a.w.c.env as unknown as Env;
    const sub = a.w.info.subresource;
    if (a.operation === "CREATE" && !sub) {
      if (signer === KUBE_APISERVER_CLIENT && asksForMasters(a.object.spec?.request))
        throw admissionForbidden(
          a,
          `use of ${KUBE_APISERVER_CLIENT} signer with system:masters group is not allowed`,
        );
      return;
    }
    if (a.operation !== "UPDATE") return;
    if (sub === "approval") {
      if (!(await authorizedForSigner(user, "approve", signer, env)))
        throw admissionForbidden(a, `user not permitted to approve requests with signerName "${signer}"`);
    } else if (sub === "status") {
      if ((a.object.status?.certificate ?? "") === (a.old?.status?.certificate ?? "")) return;
      if (!(await authorizedForSigner(user, "sign", signer, env)))
        throw admissionForbidden(a, `user not permitted to sign requests with signerName "${signer}"`);
    }
  },
};
