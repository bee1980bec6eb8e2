// Impersonation (Impersonate-User, -Group, -Uid, -Extra-<key> headers): each thing asked for
// is authorized as verb "impersonate" on users, groups, serviceaccounts, uids or userextras
// for the real user; the request then runs as the impersonated user. Upstream's messages.
import { forbidden, StatusError } from "../../api/errors";
import type { UserInfo } from "../../api/user";
import { makeGroupNames, makeUsername, splitUsername } from "./names";
import { ANONYMOUS_NAME, AUTHENTICATED, UNAUTHENTICATED } from "./types";

export const IMPERSONATE_USER = "impersonate-user";
export const IMPERSONATE_GROUP = "impersonate-group";
export const IMPERSONATE_UID = "impersonate-uid";
export const IMPERSONATE_EXTRA_PREFIX = "impersonate-extra-";

/** What the authorizer is asked, one call per impersonated item (fits workers/authz Attributes). */
export interface ImpersonationAttributes {
  user: UserInfo;
  verb: "impersonate";
  apiGroup: string;
  apiVersion: string;
  resource: "users" | "groups" | "serviceaccounts" | "uids" | "userextras";
  subresource: string;
  namespace: string;
  name: string;
  path: "";
  isResourceRequest: true;
}

export interface Decision {
  allowed: boolean;
  reason?: string;
}

export type Authorize = (attrs: ImpersonationAttributes) => Promise<Decision | boolean> | Decision | boolean;

interface ImpersonationItem {
  kind: "ServiceAccount" | "User" | "Group" | "UserExtra" | "UID";
  namespace: string;
  name: string;
  apiVersion: string;
  fieldPath: string;
}

/** Go's %v of a v1.ObjectReference, for the one error message that prints them. */
const goRef = (r: ImpersonationItem) =>
  `{${r.kind} ${r.namespace} ${r.name}  ${r.apiVersion}  ${r.fieldPath}}`;

/** Header values as net/http sees them: a repeated header is several values; Fetch joins them with ", ". */
function values(headers: Headers, name: string): string[] {
  const v = headers.get(name);
  if (v === null) return [];
  return v
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

function unescapeExtraKey(key: string): string {
  try {
    return decodeURIComponent(key);
  } catch {
    return key;
  }
}

/** The impersonation requests of a request's headers (empty: no impersonation). */
export function impersonationRequests(headers: Headers): ImpersonationItem[] {
  const items: ImpersonationItem[] = [];
  const user = headers.get(IMPERSONATE_USER) ?? "";
  if (user) {
    const sa = splitUsername(user);
    items.push(
      sa
        ? { kind: "ServiceAccount", namespace: sa.namespace, name: sa.name, apiVersion: "", fieldPath: "" }
        : { kind: "User", namespace: "", name: user, apiVersion: "", fieldPath: "" },
    );
  }
  const groups = values(headers, IMPERSONATE_GROUP);
  for (const g of groups)
    items.push({ kind: "Group", namespace: "", name: g, apiVersion: "", fieldPath: "" });
  let hasExtra = false;
  headers.forEach((value, name) => {
    const lower = name.toLowerCase();
    if (!lower.startsWith(IMPERSONATE_EXTRA_PREFIX)) return;
    hasExtra = true;
    const key = unescapeExtraKey(lower.slice(IMPERSONATE_EXTRA_PREFIX.length));
    for (const v of value
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean))
      items.push({
        kind: "UserExtra",
        namespace: "",
        name: v,
        apiVersion: "authentication.k8s.io/v1",
        fieldPath: key,
      });
  });
  const uid = headers.get(IMPERSONATE_UID) ?? "";
  if (uid)
    items.push({
      kind: "UID",
      namespace: "",
      name: uid,
      apiVersion: "authentication.k8s.io/v1",
      fieldPath: "",
    });
  if ((groups.length || hasExtra || uid) && !user)
    throw new StatusError(
      500,
      "InternalError",
      `Internal error occurred: requested [${items.map(goRef).join(" ")}] without impersonating a user`,
      {
        causes: [{ message: `requested [${items.map(goRef).join(" ")}] without impersonating a user` }],
      },
    );
  return items;
}

const sanitize = (s: string) => s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

/** upstream's responsewriters.Forbidden for an impersonation check. */
export function impersonationForbidden(a: ImpersonationAttributes, reason = ""): StatusError {
  const res = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const scope = a.namespace ? `in the namespace "${a.namespace}"` : "at the cluster scope";
  let msg = sanitize(
    `User "${a.user.name}" cannot ${a.verb} resource "${res}" in API group "${a.apiGroup}" ${scope}`,
  );
  if (reason) msg = `${msg}: ${reason}`;
  const qualified = a.apiGroup ? `${a.resource}.${a.apiGroup}` : a.resource;
  const full = a.name ? `${qualified} "${a.name}" is forbidden: ${msg}` : `${qualified} is forbidden: ${msg}`;
  return forbidden(full, { name: a.name || undefined, group: a.apiGroup || undefined, kind: a.resource });
}

/**
 * The user the request acts as: `user` itself without impersonation headers, else the
 * impersonated user once every item is authorized; 403 (upstream's message) when one is not.
 */
export async function impersonate(req: Request, user: UserInfo, authorize: Authorize): Promise<UserInfo> {
  const items = impersonationRequests(req.headers);
  if (!items.length) return user;
  const groupsSpecified = req.headers.get(IMPERSONATE_GROUP) !== null;
  let name = "";
  let groups: string[] = [];
  let uid = "";
  const extra: Record<string, string[]> = {};
  for (const it of items) {
    const a: ImpersonationAttributes = {
      user,
      verb: "impersonate",
      apiGroup: it.apiVersion ? it.apiVersion.split("/")[0] : "",
      apiVersion: it.apiVersion ? it.apiVersion.split("/")[1] : "",
      resource: "users",
      subresource: "",
      namespace: it.namespace,
      name: it.name,
      path: "",
      isResourceRequest: true,
    };
    switch (it.kind) {
      case "ServiceAccount":
        a.resource = "serviceaccounts";
        name = makeUsername(it.namespace, it.name);
        if (!groupsSpecified) groups = makeGroupNames(it.namespace);
        break;
      case "User":
        a.resource = "users";
        name = it.name;
        break;
      case "Group":
        a.resource = "groups";
        groups.push(it.name);
        break;
      case "UserExtra":
        a.resource = "userextras";
        a.subresource = it.fieldPath;
        (extra[it.fieldPath] ??= []).push(it.name);
        break;
      case "UID":
        a.resource = "uids";
        uid = it.name;
        break;
    }
    const d = await authorize(a);
    const decision = typeof d === "boolean" ? { allowed: d } : d;
    if (!decision.allowed) throw impersonationForbidden(a, decision.reason);
  }
  if (name !== ANONYMOUS_NAME) {
    if (!groups.includes(AUTHENTICATED) && !groups.includes(UNAUTHENTICATED)) groups.push(AUTHENTICATED);
  } else if (!groups.includes(UNAUTHENTICATED)) groups.push(UNAUTHENTICATED);
  const out: UserInfo = { name, uid, groups };
  if (Object.keys(extra).length) out.extra = extra;
  return out;
}
