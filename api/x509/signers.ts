// The kubernetes.io signers this control plane runs, and what each accepts, as upstream's
// signer controller checks a request before it signs (pkg/apis/certificates/helpers.go and
// pkg/controller/certificates/signer): a request a signer does not accept is marked Failed
// (reason SignerValidationFailure) instead of being signed.
import type { CertificateRequest } from "./request";

export const KUBE_APISERVER_CLIENT = "kubernetes.io/kube-apiserver-client";
export const KUBELET_CLIENT = "kubernetes.io/kube-apiserver-client-kubelet";
export const KUBELET_SERVING = "kubernetes.io/kubelet-serving";
export const SIGNERS = [KUBE_APISERVER_CLIENT, KUBELET_CLIENT, KUBELET_SERVING];

const same = (a: string[], b: string[]) => a.length === b.length && a.every((x) => b.includes(x));

function nodeSubject(req: CertificateRequest): string | undefined {
  const orgs = req.names.organizations;
  if (orgs.length !== 1 || orgs[0] !== "system:nodes") return "subject organization is not system:nodes";
  if (!req.names.commonName.startsWith("system:node:"))
    return "subject common name does not begin with 'system:node:'";
  return undefined;
}

/** Why `signer` will not sign `req` for `usages`; undefined when it will. */
export function signerRefusal(signer: string, req: CertificateRequest, usages: string[]): string | undefined {
  switch (signer) {
    case KUBE_APISERVER_CLIENT: {
      const allowed = ["digital signature", "key encipherment", "client auth"];
      const bad = usages.find((u) => !allowed.includes(u));
      return bad ? `invalid usage for client certificate: ${bad}` : undefined;
    }
    case KUBELET_CLIENT: {
      const why = nodeSubject(req);
      if (why) return why;
      if (req.sans.dns) return "DNS subjectAltNames are not allowed";
      if (req.sans.email) return "Email subjectAltNames are not allowed";
      if (req.sans.ip) return "IP subjectAltNames are not allowed";
      if (req.sans.uri) return "URI subjectAltNames are not allowed";
      const want = ["client auth", "digital signature", "key encipherment"];
      if (!same(usages, want) && !same(usages, ["client auth", "digital signature"]))
        return `usages did not match [${want.join(" ")}]`;
      return undefined;
    }
    case KUBELET_SERVING: {
      const want = ["digital signature", "key encipherment", "server auth"];
      if (!same(usages, want) && !same(usages, ["digital signature", "server auth"]))
        return `usages did not match [${want.join(" ")}]`;
      const why = nodeSubject(req);
      if (why) return why;
      if (req.sans.dns + req.sans.ip === 0) return "DNS or IP subjectAltName is required";
      if (req.sans.email) return "Email subjectAltNames are not allowed";
      if (req.sans.uri) return "URI subjectAltNames are not allowed";
      return undefined;
    }
  }
  return "not a signer of this control plane";
}
