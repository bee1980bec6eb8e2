// authentication.k8s.io/v1 reviews: TokenReview (what a token stands for, used by webhooks
// and kubelets) and SelfSubjectReview (`kubectl auth whoami`). Both are create-only and
// never stored; the handler answers 201 with the returned object.
import { field, invalid } from "../../api/errors";
import { rfc3339 } from "../../api/time";
import type { KubeObject } from "../../api/types";
import type { UserInfo } from "../../api/user";
import { storeObjects } from "./objects";
import { apiAudiences } from "./serviceaccount";
import { checkToken } from "./tokens";
import type { AuthnEnv, ObjectSource } from "./types";

const isObject = (v: unknown): v is Record<string, any> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** UserInfo as the authentication.k8s.io/v1 API spells it. */
export function apiUserInfo(u: UserInfo): Record<string, unknown> {
  const out: Record<string, unknown> = { username: u.name, groups: u.groups };
  if (u.uid) out.uid = u.uid;
  if (u.extra && Object.keys(u.extra).length) out.extra = u.extra;
  return out;
}

/** TokenReview: spec.token checked for spec.audiences (the API audiences when empty). */
export async function tokenReview(
  env: AuthnEnv,
  body: unknown,
  deps: { objects?: ObjectSource; now?: () => number } = {},
): Promise<KubeObject> {
  const review: KubeObject = isObject(body) ? structuredClone(body as KubeObject) : ({} as KubeObject);
  review.apiVersion = "authentication.k8s.io/v1";
  review.kind = "TokenReview";
  review.metadata = isObject(review.metadata) ? review.metadata : {};
  review.spec = isObject(review.spec) ? review.spec : {};
  const token = review.spec.token;
  if (typeof token !== "string" || !token)
    throw invalid({ group: "authentication.k8s.io", kind: "TokenReview" }, review.metadata.name ?? "", [
      field.required("spec.token", ""),
    ]);
  const requested: string[] = Array.isArray(review.spec.audiences) ? review.spec.audiences : [];
  const audiences = requested.length ? requested : apiAudiences(env);
  const r = await checkToken(token, {
    env,
    objects: deps.objects ?? storeObjects(env),
    now: deps.now,
    audiences,
  });
  review.status = r.ok
    ? { authenticated: true, user: apiUserInfo(r.user), audiences }
    : { user: {}, error: r.error };
  return review;
}

/** SelfSubjectReview: the caller's own user info. */
export function selfSubjectReview(user: UserInfo, now = Date.now()): KubeObject {
  return {
    apiVersion: "authentication.k8s.io/v1",
    kind: "SelfSubjectReview",
    metadata: {
      creationTimestamp: rfc3339(now),
    },
    status: { userInfo: apiUserInfo(user) },
  };
}
