// The csrapproving controller (upstream pkg/controller/certificates/approver): a pending CSR
// for kubernetes.io/kube-apiserver-client-kubelet that is a node client request (CN
// system:node:<name>, O system:nodes, client usages, no subjectAltNames) is approved when its
// requester may create certificatesigningrequests/nodeclient (a new node: bootstrap tokens), or
// /selfnodeclient when it asks for its own name (a node renewing). The question goes to the
// authorizers as a SubjectAccessReview, as upstream's does.
import { lookupGVR } from "../../../api/registry";
import type { KubeObject } from "../../../api/types";
import { DerError } from "../../../api/x509/der";
import { parseCertificateRequest } from "../../../api/x509/request";
import { KUBELET_CLIENT, signerRefusal } from "../../../api/x509/signers";
import { isConflict, isNotFound } from "../lib/api-errors";
import type { Controller, ControllerContext } from "../runtime/controller";
import { CSR_KEY } from "./signer";

const CSR = lookupGVR("certificates.k8s.io", "v1", "certificatesigningrequests")!;

type Condition = { type?: string; status?: string };
const conditions = (csr: KubeObject): Condition[] =>
  Array.isArray(csr.status?.conditions) ? csr.status.conditions : [];

/** Whether the requester of `csr` may `create` the CSR subresource `sub` (a SubjectAccessReview). */
async function requesterMay(csr: KubeObject, sub: string, ctx: ControllerContext): Promise<boolean> {
  const spec = csr.spec ?? {};
  const review = await ctx.api.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", {
    apiVersion: "authorization.k8s.io/v1",
    kind: "SubjectAccessReview",
    spec: {
      user: spec.username,
      uid: spec.uid,
      groups: spec.groups,
      extra: spec.extra,
      resourceAttributes: {
        group: "certificates.k8s.io",
        resource: "certificatesigningrequests",
        verb: "create",
        subresource: sub,
      },
    },
  });
  return review?.status?.allowed === true;
}

export const csrApprover: Controller = {
  name: "csrapproving",
  workers: 2,
  watches: { [CSR_KEY]: (csr) => (csr.spec?.signerName === KUBELET_CLIENT ? [csr.metadata.name!] : []) },
  resync: (ctx) => ctx.informers.keys(CSR_KEY),
  async sync(name, ctx) {
    const csr = ctx.informers.get(CSR_KEY, name);
    if (!csr || csr.metadata.deletionTimestamp || csr.spec?.signerName !== KUBELET_CLIENT) return;
    // decided already (approved, denied, failed), or issued
    if (conditions(csr).length || csr.status?.certificate) return;
    let commonName: string;
    try {
      const req = parseCertificateRequest(atob(String(csr.spec.request ?? "").replace(/\s+/g, "")));
      if (signerRefusal(KUBELET_CLIENT, req, csr.spec.usages ?? [])) return; // not a node client request
      commonName = req.names.commonName;
    } catch (e) {
      if (e instanceof DerError || e instanceof DOMException) return;
      throw e;
    }
    const sub = csr.spec.username === commonName ? "selfnodeclient" : "nodeclient";
    if (!(await requesterMay(csr, sub, ctx))) return;
    const next = structuredClone(csr);
    next.status = {
      ...next.status,
      conditions: [
        {
          type: "Approved",
          status: "True",
          reason: "AutoApproved",
          message: "Auto approving kubelet client certificate after SubjectAccessReview.",
        },
      ],
    };
    try {
      await ctx.api.update(CSR, next, "approval");
    } catch (e) {
      if (isConflict(e) || isNotFound(e)) return;
      throw e;
    }
  },
};
