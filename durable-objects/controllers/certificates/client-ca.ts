// A cluster's own client CA (docs/clusters.md), kept in its controller manager's storage as
// kube-controller-manager keeps --cluster-signing-key-file: made on first need (the cluster's
// first signing, its first certificate check, or `cluster create` asking for the admin's
// certificate), never an API object (no user of the cluster reads it), and gone with the
// manager's storage when the cluster is deleted (workers/clusters/teardown.ts). The root
// cluster has none here: its CA is the deployment's (EDGEPLANE_ROOT_CA, EDGEPLANE_CA_KEY).
import { type ClientCA, createClientCA } from "../../../api/x509/client-ca";
import { checkRequestSignature, parseCertificateRequest } from "../../../api/x509/request";
import { caFields, importCAKey, issueCertificate } from "../../../api/x509/sign";

const STORAGE_KEY = "client-ca";
/** the usages of a certificate issued for the cluster's admin: kubeadm's admin.conf */
const ADMIN_USAGES = ["digital signature", "key encipherment", "client auth"];
/** an admin certificate's validity is at least ten minutes, as a CSR's */
const MIN_SECONDS = 600;

export class ClusterClientCA {
  private ca?: Promise<ClientCA>;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly clusterName: string,
  ) {}

  /** The CA, made and kept the first time it is asked for. */
  get(): Promise<ClientCA> {
    this.ca ??= this.load().catch((e) => {
      this.ca = undefined;
      throw e;
    });
    return this.ca;
  }

  private async load(): Promise<ClientCA> {
    const kept = await this.storage.get<ClientCA>(STORAGE_KEY);
    if (kept?.cert && kept.key) return kept;
    const made = await createClientCA(`edgeplane-client-ca-${this.clusterName}`);
    await this.storage.put(STORAGE_KEY, made);
    return made;
  }

  /**
   * A client certificate (PEM) for the PKCS#10 request `csrPem`, its subject as requested,
   * valid for `seconds` (never past the CA). Throws when the request is not one or its
   * signature does not verify.
   */
  async issue(csrPem: string, seconds: number, now = Date.now()): Promise<string> {
    const req = parseCertificateRequest(csrPem);
    const bad = await checkRequestSignature(req);
    if (bad) throw new Error(bad);
    const ca = await this.get();
    const signing = { ...caFields(ca.cert), key: await importCAKey(ca.key) };
    return issueCertificate(signing, req, {
      usages: ADMIN_USAGES,
      notBefore: now - 5 * 60_000,
      notAfter: now + Math.max(MIN_SECONDS, seconds) * 1000,
    });
  }
}
