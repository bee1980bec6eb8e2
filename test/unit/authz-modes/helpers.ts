// Attributes for the authorizer unit tests.
import type { UserInfo } from "../../../api/user";
import type { Attributes } from "../../../workers/authz/types";

export function who(name: string, ...groups: string[]): UserInfo {
  return { name, uid: `uid-${name}`, groups: [...groups, "system:authenticated"] };
}

export function res(
  user: UserInfo,
  verb: string,
  resource: string,
  namespace = "",
  extra: Partial<Attributes> = {},
): Attributes {
  return {
    user,
    verb,
    apiGroup: "",
    apiVersion: "v1",
    resource,
    subresource: "",
    namespace,
    name: "",
    path: `/api/v1/${namespace ? `namespaces/${namespace}/` : ""}${resource}`,
    isResourceRequest: true,
    ...extra,
  };
}

export function nonRes(user: UserInfo, verb: string, path: string): Attributes {
  return {
    user,
    verb,
    apiGroup: "",
    resource: "",
    subresource: "",
    namespace: "",
    name: "",
    path,
    isResourceRequest: false,
  };
}
