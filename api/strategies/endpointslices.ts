// discovery.k8s.io/v1 EndpointSlices: the endpoints of a Service in slices of at most 100,
// each endpoint with its ready/serving/terminating conditions. kubectl describe service reads
// them (not Endpoints) for its "Endpoints:" line.
import { field, type StatusCause } from "../errors";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { endpointIPErrors } from "../validation/endpoint-ip";
import { validateMeta } from "../validation/metadata";
import { isDNS1123Label, isDNS1123Subdomain, isIP, isIPv4, isValidPortNum } from "../validation/names";
import { ageColumn, column, isObject, nameColumn } from "./common";

const ADDRESS_TYPES = ["IPv4", "IPv6", "FQDN"];
const PROTOCOLS = ["SCTP", "TCP", "UDP"];
const MAX_ENDPOINTS = 1000;
const MAX_ADDRESSES = 100;
const MAX_PORTS = 20000;
const arr = (v: unknown): any[] => (Array.isArray(v) ? v : []);

/** "a,b,c + N more...", or <unset> for none (upstream's listWithMoreString). */
function firstThree(values: string[]): string {
  if (values.length === 0) return "<unset>";
  const shown = values.slice(0, 3).join(",");
  return values.length > 3 ? `${shown} + ${values.length - 3} more...` : shown;
}

const portsCell = (o: KubeObject) =>
  firstThree(arr(o.ports).map((p) => (p?.port != null ? String(p.port) : p?.name != null ? p.name : "*")));

const endpointsCell = (o: KubeObject) => firstThree(arr(o.endpoints).flatMap((e) => arr(e?.addresses)));

function validAddress(type: string, a: unknown): string[] {
  if (typeof a !== "string") return ["must be a string"];
  if (type === "IPv4") return isIPv4(a) ? endpointIPErrors(a) : ["must be a valid IPv4 address"];
  if (type === "IPv6") return isIP(a) && !isIPv4(a) ? endpointIPErrors(a) : ["must be a valid IPv6 address"];
  return isDNS1123Subdomain(a);
}

export function validateEndpointSlice(o: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(o, old, { namespaced: true });
  const type = o.addressType;
  if (!type) causes.push(field.required("addressType"));
  else if (!ADDRESS_TYPES.includes(type)) causes.push(field.notSupported("addressType", type, ADDRESS_TYPES));
  if (old && old.addressType !== type) causes.push(field.invalid("addressType", type, "field is immutable"));
  const endpoints = arr(o.endpoints);
  if (endpoints.length > MAX_ENDPOINTS)
    causes.push(field.tooMany("endpoints", endpoints.length, MAX_ENDPOINTS));
  endpoints.forEach((e, i) => {
    const p = `endpoints[${i}]`;
    const addresses = arr(e?.addresses);
    if (addresses.length === 0)
      causes.push(field.required(`${p}.addresses`, "must contain at least 1 address"));
    else if (addresses.length > MAX_ADDRESSES)
      causes.push(field.tooMany(`${p}.addresses`, addresses.length, MAX_ADDRESSES));
    addresses.forEach((a, j) => {
      if (ADDRESS_TYPES.includes(type))
        for (const msg of validAddress(type, a)) causes.push(field.invalid(`${p}.addresses[${j}]`, a, msg));
    });
    if (e?.hostname != null)
      for (const msg of isDNS1123Label(String(e.hostname)))
        causes.push(field.invalid(`${p}.hostname`, e.hostname, msg));
    if (e?.nodeName != null)
      for (const msg of isDNS1123Subdomain(String(e.nodeName)))
        causes.push(field.invalid(`${p}.nodeName`, e.nodeName, msg));
  });
  const ports = arr(o.ports);
  if (ports.length > MAX_PORTS) causes.push(field.tooMany("ports", ports.length, MAX_PORTS));
  const names = new Set<string>();
  ports.forEach((port, i) => {
    const p = `ports[${i}]`;
    const name = port?.name ?? "";
    if (name !== "")
      for (const msg of isDNS1123Label(name)) causes.push(field.invalid(`${p}.name`, name, msg));
    if (names.has(name)) causes.push(field.duplicate(`${p}.name`, name));
    names.add(name);
    if (port?.protocol != null && !PROTOCOLS.includes(port.protocol))
      causes.push(field.notSupported(`${p}.protocol`, port.protocol, PROTOCOLS));
    if (port?.port != null)
      for (const msg of isValidPortNum(port.port)) causes.push(field.invalid(`${p}.port`, port.port, msg));
  });
  return causes;
}

export const endpointslices: ResourceDef = {
  group: "discovery.k8s.io",
  version: "v1",
  resource: "endpointslices",
  kind: "EndpointSlice",
  listKind: "EndpointSliceList",
  singular: "endpointslice",
  namespaced: true,
  verbs: STANDARD_VERBS,
  strategy: {
    defaults: (o) => {
      for (const p of arr(o.ports)) if (isObject(p) && !p.protocol) p.protocol = "TCP";
      for (const e of arr(o.endpoints))
        if (isObject(e) && isObject(e.conditions) === false) e.conditions = {};
    },
    validate: validateEndpointSlice,
    columns: [
      nameColumn,
      column(
        "AddressType",
        "string",
        "The type of address carried by this EndpointSlice.",
        (o) => o.addressType ?? "",
      ),
      column("Ports", "string", "The network ports exposed by each endpoint in this slice.", portsCell),
      column("Endpoints", "string", "The unique endpoints in this slice.", endpointsCell),
      ageColumn,
    ],
    generation: false,
  },
};
