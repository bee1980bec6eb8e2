// upstream's ValidateEndpointIP (pkg/apis/core/validation): the addresses an Endpoints or
// EndpointSlice may name. Unspecified and loopback addresses make no sense as a destination,
// and link-local ones belong to the node (e.g. a metadata service), so all are refused.
import { isIP, isIPv4 } from "./names";

export function endpointIPErrors(ip: string): string[] {
  if (!isIP(ip)) return ["must be a valid IP address"];
  const errs: string[] = [];
  if (isIPv4(ip)) {
    const [a, b, c] = ip.split(".").map(Number) as [number, number, number];
    if (ip === "0.0.0.0") errs.push(`may not be unspecified (${ip})`);
    if (a === 127) errs.push("may not be in the loopback range (127.0.0.0/8, ::1/128)");
    if (a === 169 && b === 254) errs.push("may not be in the link-local range (169.254.0.0/16, fe80::/10)");
    if (a === 224 && b === 0 && c === 0)
      errs.push("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)");
    return errs;
  }
  const lower = ip.toLowerCase();
  if (/^[0:]+$/.test(lower)) errs.push(`may not be unspecified (${ip})`);
  if (/^[0:]+1$/.test(lower) && lower !== "1")
    errs.push("may not be in the loopback range (127.0.0.0/8, ::1/128)");
  if (/^fe[89ab]/.test(lower)) errs.push("may not be in the link-local range (169.254.0.0/16, fe80::/10)");
  if (/^ff02:/.test(lower))
    errs.push("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)");
  return errs;
}
