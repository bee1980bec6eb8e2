// The Cluster kind's own REST storage (workers/handlers/rest-storages.ts): create, get, list,
// update and watch are the generic store's; a delete tears the cluster down first
// (teardown.ts); clusters/<name>/token issues an admin credential for it (a TokenRequest), and
// clusters/<name>/certificate a client certificate of its own CA for a posted request (a
// CertificateSigningRequest, answered with status.certificate), as kubeadm signs admin.conf's.
import { field, forbidden, invalid, notFound } from "../../api/errors";
import { CLUSTERS_GROUP, ROOT_CLUSTER_NAME } from "../../api/strategies/clusters";
import { isObject } from "../../api/strategies/common";
import { rfc3339 } from "../../api/time";
import type { KubeObject } from "../../api/types";
import { parseCertificateRequest } from "../../api/x509/request";
import { childEnv } from "../../durable-objects/clusters";
import { admitMutating, admitValidating } from "../admission/index";
import { DEFAULT_ADMIN_SECONDS, issueClusterAdminToken } from "../authn/cluster-admin";
import { decodeObject } from "../encoding/request-body";
import { encoded } from "../encoding/respond";
import { remove } from "../handlers/resource";
import type { WriteContext } from "../handlers/write-context";
import { markDeleting, refOf } from "./lookup";
import { teardown } from "./teardown";

const MIN_SECONDS = 600;
const MAX_SECONDS = 2 ** 32;

/** DELETE clusters/<name>: its objects go first, then the Cluster object itself. */
export async function deleteCluster(w: WriteContext): Promise<Response> {
  const name = w.info.name;
  if (name === ROOT_CLUSTER_NAME)
    throw forbidden(`clusters.${CLUSTERS_GROUP} "${name}" is forbidden: the root cluster cannot be deleted`);
  const obj = await w.store.find("", name);
  if (!obj || w.dryRun) return remove(w, "");
  const done = markDeleting(name);
  try {
    await teardown(w.c.env, refOf(w.c.env, obj));
    return await remove(w, "");
  } finally {
    done();
  }
}

/**
 * What a cluster's credential subresource (token, certificate) was posted, admitted as a
 * CREATE of that kind (mutated as posted; validated by the caller once checked, as
 * serviceaccounts/token admits its TokenRequest), and the live Cluster it names (404 when it is
 * gone or going).
 */
async function postedFor(
  w: WriteContext,
  kind: { apiVersion: string; kind: string },
): Promise<{ posted: KubeObject & { spec?: Record<string, unknown> }; obj: KubeObject }> {
  const body = await decodeObject(w.c.req.raw);
  const posted = (isObject(body) ? body : {}) as KubeObject & { spec?: Record<string, unknown> };
  const obj = await w.store.find("", w.info.name);
  if (!obj || obj.metadata.deletionTimestamp) throw notFound(w.def, w.info.name);
  posted.apiVersion ??= kind.apiVersion;
  posted.kind ??= kind.kind;
  if (!isObject(posted.metadata)) posted.metadata = {};
  await admitMutating(w, "CREATE", posted, undefined);
  return { posted, obj };
}

/** spec.expirationSeconds of a credential asked for (`fallback` when unset), 422 unless in range. */
function expirationSeconds(
  requested: unknown,
  fallback: number,
  kind: { group: string; kind: string },
  name: string,
): number {
  const seconds = requested === undefined || requested === null ? fallback : requested;
  if (
    typeof seconds !== "number" ||
    !Number.isInteger(seconds) ||
    seconds < MIN_SECONDS ||
    seconds > MAX_SECONDS
  )
    throw invalid(kind, name, [
      field.invalid(
        "spec.expirationSeconds",
        seconds as number,
        "must be an integer of at least 600 seconds and at most 2^32",
      ),
    ]);
  return seconds;
}

/** POST clusters/<name>/token: an admin credential of the cluster (system:masters there only). */
export async function clusterToken(w: WriteContext): Promise<Response> {
  const name = w.info.name;
  const { posted, obj } = await postedFor(w, {
    apiVersion: "authentication.k8s.io/v1",
    kind: "TokenRequest",
  });
  const seconds = expirationSeconds(
    isObject(posted.spec) ? posted.spec.expirationSeconds : undefined,
    DEFAULT_ADMIN_SECONDS,
    { group: "authentication.k8s.io", kind: "TokenRequest" },
    name,
  );
  await admitValidating(w, "CREATE", posted, undefined);
  const env = childEnv(w.c.env, refOf(w.c.env, obj).key);
  const { token, expiresAt } = await issueClusterAdminToken(env, seconds);
  const tr = {
    apiVersion: "authentication.k8s.io/v1",
    kind: "TokenRequest",
    metadata: { name, creationTimestamp: rfc3339(Date.now()) },
    spec: { audiences: [], expirationSeconds: seconds },
    status: { token, expirationTimestamp: rfc3339(expiresAt) },
  };
  return encoded(JSON.stringify(tr), 201, w.c.req.header("accept") ?? null);
}

/** a client certificate of a cluster lasts a year unless asked otherwise (upstream's signing duration) */
const DEFAULT_CERT_SECONDS = 365 * 24 * 3600;

/**
 * POST clusters/<name>/certificate: a client certificate of the cluster for the PKCS#10
 * request in spec.request (base64 PEM, its subject as requested), issued by the cluster's own
 * client CA, for spec.expirationSeconds (a year). Whoever may create this subresource in the
 * root may be anyone in the cluster, as with its token subresource.
 */
export async function clusterCertificate(w: WriteContext): Promise<Response> {
  const name = w.info.name;
  const { posted, obj } = await postedFor(w, {
    apiVersion: "certificates.k8s.io/v1",
    kind: "CertificateSigningRequest",
  });
  const spec = isObject(posted.spec) ? posted.spec : {};
  const kind = { group: "certificates.k8s.io", kind: "CertificateSigningRequest" };
  const seconds = expirationSeconds(spec.expirationSeconds, DEFAULT_CERT_SECONDS, kind, name);
  let csrPem = "";
  try {
    csrPem = atob(String(spec.request ?? "").replace(/\s+/g, ""));
    parseCertificateRequest(csrPem);
  } catch {
    throw invalid(kind, name, [
      field.invalid("spec.request", "", "must be a base64-encoded PEM CERTIFICATE REQUEST"),
    ]);
  }
  await admitValidating(w, "CREATE", posted, undefined);
  const key = refOf(w.c.env, obj).key;
  const manager = w.c.env.CONTROLLERS.get(w.c.env.CONTROLLERS.idFromName(key));
  let cert: string;
  try {
    cert = await manager.issueClientCertificate(csrPem, seconds);
  } catch (e) {
    throw invalid(kind, name, [field.invalid("spec.request", "", (e as Error).message)]);
  }
  const out = {
    apiVersion: "certificates.k8s.io/v1",
    kind: "CertificateSigningRequest",
    metadata: { name, creationTimestamp: rfc3339(Date.now()) },
    spec: { request: spec.request, expirationSeconds: seconds, usages: ["digital signature", "client auth"] },
    status: { certificate: btoa(cert) },
  };
  return encoded(JSON.stringify(out), 201, w.c.req.header("accept") ?? null);
}
