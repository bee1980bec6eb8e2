// POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token (`kubectl create token`):
// validates the TokenRequest as upstream, looks up the service account and any bound
// object, and answers the request with status.token and status.expirationTimestamp.
import { badRequest, conflict, field, invalid, notFound, type StatusCause } from "../../api/errors";
import { rfc3339 } from "../../api/time";
import type { KubeObject } from "../../api/types";
import { storeObjects } from "./objects";
import { apiAudiences, type BoundObject, issueToken, type ObjectRef } from "./serviceaccount";
import { type AuthnEnv, nowMs, type ObjectSource } from "./types";

const GK = { group: "authentication.k8s.io", kind: "TokenRequest" };
export const DEFAULT_EXPIRATION_SECONDS = 3600;
export const MIN_EXPIRATION_SECONDS = 600;
export const MAX_EXPIRATION_SECONDS = 2 ** 32;

export interface TokenRequestDeps {
  objects?: ObjectSource;
  now?: () => number;
  /** receives upstream's warnings (e.g. an expiration shortened to the maximum) */
  warn?: (message: string) => void;
  /** validating admission of the defaulted, validated request, before anything is looked up or issued */
  admit?: (req: KubeObject) => Promise<void>;
}

const isObject = (v: unknown): v is Record<string, any> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** The TokenRequest's static validation (upstream's ValidateTokenRequest). */
export function validateTokenRequest(tr: KubeObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const exp = tr.spec?.expirationSeconds;
  if (typeof exp !== "number" || !Number.isInteger(exp))
    causes.push(field.invalid("spec.expirationSeconds", exp ?? null, "must be an integer"));
  else if (exp < MIN_EXPIRATION_SECONDS)
    causes.push(
      field.invalid("spec.expirationSeconds", exp, "may not specify a duration less than 10 minutes"),
    );
  else if (exp > MAX_EXPIRATION_SECONDS)
    causes.push(
      field.invalid("spec.expirationSeconds", exp, "may not specify a duration larger than 2^32 seconds"),
    );
  const auds = tr.spec?.audiences;
  if (
    auds !== undefined &&
    auds !== null &&
    (!Array.isArray(auds) || auds.some((a) => typeof a !== "string"))
  )
    causes.push(field.invalid("spec.audiences", auds, "must be a list of strings"));
  return causes;
}

async function boundObject(
  objects: ObjectSource,
  namespace: string,
  saName: string,
  ref: Record<string, any>,
): Promise<{ bound: BoundObject; node?: ObjectRef }> {
  const apiVersion = typeof ref.apiVersion === "string" ? ref.apiVersion : "";
  const group = apiVersion.includes("/") ? apiVersion.split("/")[0] : "";
  const kind = typeof ref.kind === "string" ? ref.kind : "";
  const name = typeof ref.name === "string" ? ref.name : "";
  let obj: KubeObject | undefined;
  let node: ObjectRef | undefined;
  if (group === "" && kind === "Pod") {
    obj = await objects.get("pods", namespace, name);
    if (!obj) throw notFound({ group: "", resource: "pods" }, name);
    if (obj.spec?.serviceAccountName !== saName)
      throw badRequest(
        `cannot bind token for serviceaccount "${saName}" to pod running with different serviceaccount name.`,
      );
    const nodeName = obj.spec?.nodeName;
    if (typeof nodeName === "string" && nodeName) {
      const n = await objects.get("nodes", "", nodeName);
      if (n) node = { name: nodeName, uid: n.metadata.uid ?? "" };
    }
  } else if (group === "" && kind === "Secret") {
    obj = await objects.get("secrets", namespace, name);
    if (!obj) throw notFound({ group: "", resource: "secrets" }, name);
  } else if (group === "" && kind === "Node") {
    obj = await objects.get("nodes", "", name);
    if (!obj) throw notFound({ group: "", resource: "nodes" }, name);
  } else {
    const version = apiVersion.includes("/") ? apiVersion.split("/")[1] : apiVersion;
    throw badRequest(
      `cannot bind token to object of type ${group ? `${group}/` : ""}${version}, Kind=${kind}`,
    );
  }
  const uid = obj.metadata.uid ?? "";
  if (ref.uid && ref.uid !== uid)
    throw conflict(
      { group: "", resource: kind },
      name,
      `the UID in the bound object reference (${ref.uid}) does not match the UID in record. The object might have been deleted and then recreated`,
    );
  return { bound: { kind: kind as BoundObject["kind"], name, uid }, node };
}

/**
 * Creates a token for the service account `sa` (from the URL) as the TokenRequest `body`
 * asks; returns the TokenRequest with its status filled in (the handler answers 201).
 */
export async function tokenRequest(
  env: AuthnEnv,
  sa: { namespace: string; name: string },
  body: unknown,
  deps: TokenRequestDeps = {},
): Promise<KubeObject> {
  const objects = deps.objects ?? storeObjects(env);
  const req: KubeObject = isObject(body) ? structuredClone(body as KubeObject) : ({} as KubeObject);
  req.apiVersion = "authentication.k8s.io/v1";
  req.kind = "TokenRequest";
  req.metadata = isObject(req.metadata) ? req.metadata : {};
  req.spec = isObject(req.spec) ? req.spec : {};
  if (req.spec.expirationSeconds === undefined || req.spec.expirationSeconds === null)
    req.spec.expirationSeconds = DEFAULT_EXPIRATION_SECONDS;
  if (req.metadata.name && req.metadata.name !== sa.name)
    throw invalid(GK, sa.name, [
      field.invalid("metadata.name", req.metadata.name, "must match the service account name if specified"),
    ]);
  if (req.metadata.namespace && req.metadata.namespace !== sa.namespace)
    throw invalid(GK, sa.name, [
      field.invalid(
        "metadata.namespace",
        req.metadata.namespace,
        "must match the service account namespace if specified",
      ),
    ]);
  const account = await objects.get("serviceaccounts", sa.namespace, sa.name);
  if (!account) throw notFound({ group: "", resource: "serviceaccounts" }, sa.name);
  if (!Array.isArray(req.spec.audiences) || req.spec.audiences.length === 0)
    req.spec.audiences = apiAudiences(env);
  req.metadata.name = sa.name;
  req.metadata.namespace = sa.namespace;
  const now = nowMs(deps);
  req.metadata.creationTimestamp = rfc3339(now);
  delete req.status;
  const causes = validateTokenRequest(req);
  // upstream names no object in this error: TokenRequest.authentication.k8s.io "" is invalid
  if (causes.length) throw invalid(GK, "", causes);
  if (deps.admit) await deps.admit(req);
  let bound: BoundObject | undefined;
  let node: ObjectRef | undefined;
  if (isObject(req.spec.boundObjectRef))
    ({ bound, node } = await boundObject(objects, sa.namespace, sa.name, req.spec.boundObjectRef));
  const max = Number(env.EDGEPLANE_SA_MAX_TOKEN_EXPIRATION_SECONDS ?? 0);
  if (max > 0 && req.spec.expirationSeconds > max) {
    deps.warn?.(`requested expiration of ${req.spec.expirationSeconds} seconds shortened to ${max} seconds`);
    req.spec.expirationSeconds = max;
  }
  const issued = await issueToken(
    env,
    {
      namespace: sa.namespace,
      serviceAccount: sa.name,
      uid: account.metadata.uid ?? "",
      audiences: req.spec.audiences,
      expirationSeconds: req.spec.expirationSeconds,
      boundObject: bound,
      node,
    },
    { objects, now: () => now },
  );
  req.status = { token: issued.token, expirationTimestamp: rfc3339(now + req.spec.expirationSeconds * 1000) };
  return req;
}
