// Service account user names and groups, as upstream spells them.
export const SA_USER_PREFIX = "system:serviceaccount:";
export const SA_GROUP = "system:serviceaccounts";

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export const makeUsername = (namespace: string, name: string) => `${SA_USER_PREFIX}${namespace}:${name}`;

export const makeGroupNames = (namespace: string) => [SA_GROUP, `${SA_GROUP}:${namespace}`];

/** The namespace and name of a service account user name, or undefined when it is not one. */
export function splitUsername(username: string): { namespace: string; name: string } | undefined {
  if (!username.startsWith(SA_USER_PREFIX)) return undefined;
  const parts = username.slice(SA_USER_PREFIX.length).split(":");
  if (parts.length !== 2) return undefined;
  const [namespace, name] = parts;
  if (namespace.length > 63 || !DNS_LABEL.test(namespace)) return undefined;
  if (name.length > 253 || !DNS_SUBDOMAIN.test(name)) return undefined;
  return { namespace, name };
}

/** Go's %q of a string slice: ["a" "b"]. */
export const goQuoteList = (xs: string[]) => `[${xs.map((x) => JSON.stringify(x)).join(" ")}]`;
