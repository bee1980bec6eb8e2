// upstream's IsDomainPrefixedPath: "acme.io/foo", a DNS subdomain, a slash, and a path of
// URL-safe characters (an IngressClass's controller, a Job's managedBy).
import { field, type StatusCause } from "../errors";
import { isDNS1123Subdomain } from "./names";

const PATH_FMT = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+";
const PATH = /^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$/;

export function domainPrefixedPath(path: string, value: string): StatusCause[] {
  const slash = value.indexOf("/");
  const host = value.slice(0, Math.max(slash, 0));
  const rest = value.slice(slash + 1);
  if (slash <= 0 || !rest)
    return [field.invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')];
  const causes = isDNS1123Subdomain(host).map((m) => field.invalid(path, host, m));
  if (!PATH.test(rest))
    causes.push(field.invalid(path, rest, `Invalid path (regex used for validation is '${PATH_FMT}')`));
  return causes;
}
