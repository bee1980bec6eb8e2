// networking.k8s.io/v1: Ingresses, IngressClasses and NetworkPolicies, stored and served with
// upstream's defaults, validation and tables. No controller acts on them here: an ingress
// controller or a network plugin that watches them does.

import { field, type StatusCause } from "../errors";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { CIDR_ERROR, parseCidr, strictSubset } from "../validation/cidr";
import { domainPrefixedPath } from "../validation/domain-path";
import { formatLabelSelector, validateLabelSelector, validateMeta } from "../validation/metadata";
import {
  isDNS1035Label,
  isDNS1123Label,
  isDNS1123Subdomain,
  isIP,
  isValidPathSegmentName,
  isValidPortName,
  isValidPortNum,
  isWildcardDNS1123Subdomain,
} from "../validation/names";
import { ageColumn, column, ensureObject, isObject, nameColumn } from "./common";

const CLASS_ANNOTATION = "kubernetes.io/ingress.class";
const PATH_TYPES = ["Exact", "ImplementationSpecific", "Prefix"];
const PROTOCOLS = ["TCP", "UDP", "SCTP"];
const POLICY_TYPES = ["Ingress", "Egress"];
const list = (v: unknown): any[] => (Array.isArray(v) ? v : []);
const each = (path: string, msgs: string[], value: unknown) => msgs.map((m) => field.invalid(path, value, m));

/** A host: wildcard or plain DNS subdomain. */
const hostCauses = (path: string, host: string) =>
  each(path, host.includes("*") ? isWildcardDNS1123Subdomain(host) : isDNS1123Subdomain(host), host);

/** A typed reference (a resource backend, an IngressClass's parameters). */
function validateTypedRef(ref: any, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  if (ref.apiGroup) causes.push(...each(`${path}.apiGroup`, isDNS1123Subdomain(ref.apiGroup), ref.apiGroup));
  for (const k of ["kind", "name"]) {
    if (!ref[k]) causes.push(field.required(`${path}.${k}`, `${k} is required`));
    else causes.push(...each(`${path}.${k}`, isValidPathSegmentName(String(ref[k])), ref[k]));
  }
  return causes;
}

function validateBackend(b: any, path: string): StatusCause[] {
  if (!isObject(b)) return [];
  if (b.resource && b.service)
    return [field.invalid(path, "", "cannot set both resource and service backends")];
  if (isObject(b.resource)) return validateTypedRef(b.resource, `${path}.resource`);
  if (!isObject(b.service)) return [field.invalid(path, "", "resource or service backend is required")];
  const causes: StatusCause[] = [];
  const svc = b.service;
  if (!svc.name) causes.push(field.required(`${path}.service.name`));
  else causes.push(...each(`${path}.service.name`, isDNS1035Label(svc.name), svc.name));
  const port = isObject(svc.port) ? svc.port : {};
  const hasNumber = port.number !== undefined && port.number !== 0;
  if (port.name && hasNumber) causes.push(field.invalid(path, "", "cannot set both port name & port number"));
  else if (port.name)
    causes.push(...each(`${path}.service.port.name`, isValidPortName(port.name), port.name));
  else if (hasNumber)
    causes.push(...each(`${path}.service.port.number`, isValidPortNum(port.number), port.number));
  else causes.push(field.required(path, "port name or number is required"));
  return causes;
}

function validateHttpPath(p: any, path: string): StatusCause[] {
  if (!p.pathType) return [field.required(`${path}.pathType`, "pathType must be specified")];
  const causes: StatusCause[] = [];
  const value = typeof p.path === "string" ? p.path : "";
  if (p.pathType === "Exact" || p.pathType === "Prefix") {
    if (!value.startsWith("/")) causes.push(field.invalid(`${path}.path`, value, "must be an absolute path"));
    if (value)
      for (const seq of ["//", "/./", "/../", "%2f", "%2F"])
        if (value.includes(seq))
          causes.push(field.invalid(`${path}.path`, value, `must not contain '${seq}'`));
    for (const suffix of ["/..", "/."])
      if (value.endsWith(suffix))
        causes.push(field.invalid(`${path}.path`, value, `cannot end with '${suffix}'`));
  } else if (p.pathType === "ImplementationSpecific") {
    if (value && !value.startsWith("/"))
      causes.push(field.invalid(`${path}.path`, value, "must be an absolute path"));
  } else causes.push(field.notSupported(`${path}.pathType`, p.pathType, PATH_TYPES));
  causes.push(...validateBackend(p.backend, `${path}.backend`));
  return causes;
}

export function validateIngress(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: true });
  const spec = isObject(obj.spec) ? obj.spec : {};
  if (list(spec.rules).length === 0 && !spec.defaultBackend)
    causes.push(
      field.invalid("spec", spec.rules ?? null, "either `defaultBackend` or `rules` must be specified"),
    );
  if (spec.defaultBackend) causes.push(...validateBackend(spec.defaultBackend, "spec.defaultBackend"));
  list(spec.rules).forEach((rule, i) => {
    const p = `spec.rules[${i}]`;
    if (rule?.host) {
      if (isIP(rule.host))
        causes.push(field.invalid(`${p}.host`, rule.host, "must be a DNS name, not an IP address"));
      causes.push(...hostCauses(`${p}.host`, rule.host));
    }
    if (!isObject(rule?.http)) return;
    const paths = list(rule.http.paths);
    if (paths.length === 0) causes.push(field.required(`${p}.http.paths`));
    paths.forEach((hp, j) => {
      causes.push(...validateHttpPath(hp ?? {}, `${p}.http.paths[${j}]`));
    });
  });
  list(spec.tls).forEach((tls, i) => {
    list(tls?.hosts).forEach((h, j) => {
      causes.push(...hostCauses(`spec.tls[${i}].hosts[${j}]`, String(h)));
    });
    if (tls?.secretName)
      causes.push(...each(`spec.tls[${i}].secretName`, isDNS1123Subdomain(tls.secretName), tls.secretName));
  });
  if (spec.ingressClassName)
    causes.push(
      ...each("spec.ingressClassName", isDNS1123Subdomain(spec.ingressClassName), spec.ingressClassName),
    );
  const annotated = obj.metadata.annotations?.[CLASS_ANNOTATION];
  if (!old && annotated !== undefined && spec.ingressClassName && annotated !== spec.ingressClassName)
    causes.push(
      field.invalid(
        `annotations.${CLASS_ANNOTATION}`,
        annotated,
        "must match `ingressClassName` when both are specified",
      ),
    );
  return causes;
}

export function validateIngressClass(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: false });
  const spec = isObject(obj.spec) ? obj.spec : {};
  const controller: string = typeof spec.controller === "string" ? spec.controller : "";
  if (controller.length > 250) causes.push(field.tooLong("spec.controller", 250));
  if (!controller) causes.push(field.required("spec.controller"));
  else causes.push(...domainPrefixedPath("spec.controller", controller));
  if (old && isObject(old.spec) && old.spec.controller !== spec.controller)
    causes.push(field.invalid("spec.controller", spec.controller ?? null, "field is immutable"));
  if (isObject(spec.parameters)) {
    const p = spec.parameters;
    causes.push(...validateTypedRef(p, "spec.parameters"));
    if (!p.scope) causes.push(field.required("spec.parameters.scope"));
    else if (p.scope !== "Cluster" && p.scope !== "Namespace")
      causes.push(field.notSupported("spec.parameters.scope", p.scope, ["Cluster", "Namespace"]));
    else if (p.scope === "Namespace") {
      if (!p.namespace)
        causes.push(field.required("spec.parameters.namespace", "`parameters.scope` is set to 'Namespace'"));
      else causes.push(...each("spec.parameters.namespace", isDNS1123Label(p.namespace), p.namespace));
    } else if (p.namespace)
      causes.push(field.forbidden("spec.parameters.namespace", "`parameters.scope` is set to 'Cluster'"));
  }
  return causes;
}

function validatePolicyPort(port: any, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  if (port.protocol !== undefined && !PROTOCOLS.includes(port.protocol))
    causes.push(field.notSupported(`${path}.protocol`, port.protocol, PROTOCOLS));
  if (typeof port.port === "number") {
    causes.push(...each(`${path}.port`, isValidPortNum(port.port), port.port));
    if (port.endPort !== undefined) {
      if (port.endPort < port.port)
        causes.push(field.invalid(`${path}.endPort`, port.port, "must be greater than or equal to `port`"));
      causes.push(...each(`${path}.endPort`, isValidPortNum(port.endPort), port.endPort));
    }
  } else if (typeof port.port === "string") {
    if (port.endPort !== undefined)
      causes.push(
        field.invalid(`${path}.endPort`, port.endPort, "may not be specified when `port` is non-numeric"),
      );
    causes.push(...each(`${path}.port`, isValidPortName(port.port), port.port));
  } else if (port.endPort !== undefined)
    causes.push(
      field.invalid(`${path}.endPort`, port.endPort, "may not be specified when `port` is not specified"),
    );
  return causes;
}

function validatePeer(peer: any, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  let peers = 0;
  for (const k of ["podSelector", "namespaceSelector"])
    if (isObject(peer[k])) {
      peers++;
      causes.push(...validateLabelSelector(peer[k], `${path}.${k}`));
    }
  if (isObject(peer.ipBlock)) {
    peers++;
    const block = peer.ipBlock;
    const p = `${path}.ipBlock`;
    if (!block.cidr) causes.push(field.required(`${p}.cidr`));
    else {
      const outer = parseCidr(block.cidr);
      if (!outer) causes.push(field.invalid(`${p}.cidr`, block.cidr, CIDR_ERROR));
      else
        list(block.except).forEach((e, i) => {
          const inner = parseCidr(String(e));
          if (!inner) causes.push(field.invalid(`${p}.except[${i}]`, e, CIDR_ERROR));
          else if (!strictSubset(inner, outer))
            causes.push(field.invalid(`${p}.except[${i}]`, e, "must be a strict subset of `cidr`"));
        });
    }
  }
  if (peers === 0) causes.push(field.required(path, "must specify a peer"));
  else if (peers > 1 && isObject(peer.ipBlock))
    causes.push(field.forbidden(path, "may not specify both ipBlock and another peer"));
  return causes;
}

export function validateNetworkPolicy(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: true });
  const spec = isObject(obj.spec) ? obj.spec : {};
  if (isObject(spec.podSelector)) causes.push(...validateLabelSelector(spec.podSelector, "spec.podSelector"));
  for (const [dir, peersKey] of [
    ["ingress", "from"],
    ["egress", "to"],
  ] as const)
    list(spec[dir]).forEach((rule, i) => {
      const p = `spec.${dir}[${i}]`;
      list(rule?.ports).forEach((port, j) => {
        causes.push(...validatePolicyPort(port ?? {}, `${p}.ports[${j}]`));
      });
      list(rule?.[peersKey]).forEach((peer, j) => {
        causes.push(...validatePeer(peer ?? {}, `${p}.${peersKey}[${j}]`));
      });
    });
  const types = list(spec.policyTypes);
  if (types.length > 2)
    causes.push(field.invalid("spec.policyTypes", types, "may not specify more than two policyTypes"));
  else
    types.forEach((ty, i) => {
      if (!POLICY_TYPES.includes(ty))
        causes.push(field.notSupported(`spec.policyTypes[${i}]`, ty, POLICY_TYPES));
    });
  return causes;
}

export function defaultNetworkPolicy(obj: KubeObject): void {
  const spec = ensureObject(obj, "spec");
  if (list(spec.policyTypes).length === 0) {
    spec.policyTypes = ["Ingress"];
    if (list(spec.egress).length > 0) spec.policyTypes.push("Egress");
  }
  for (const dir of ["ingress", "egress"])
    for (const rule of list(spec[dir]))
      for (const port of list(rule?.ports)) if (isObject(port)) port.protocol ??= "TCP";
}

/** The Ingress's hosts as kubectl prints them: up to three, then "+ N more...", or "*". */
function hostsCell(o: KubeObject): string {
  const rules = list(o.spec?.rules);
  const hosts: string[] = [];
  let i = 0;
  for (; i < rules.length && hosts.length < 3; i++) if (rules[i]?.host) hosts.push(rules[i].host);
  if (!hosts.length) return "*";
  return i < rules.length ? `${hosts.join(",")} + ${rules.length - 3} more...` : hosts.join(",");
}

function addressCell(o: KubeObject): string {
  const seen = new Set<string>();
  for (const ing of list(o.status?.loadBalancer?.ingress)) {
    const a = ing?.ip || ing?.hostname;
    if (a) seen.add(a);
  }
  const s = [...seen].sort().join(",");
  return s.length > 16 ? `${s.slice(0, 13)}...` : s;
}

export const ingresses: ResourceDef = {
  group: "networking.k8s.io",
  version: "v1",
  resource: "ingresses",
  kind: "Ingress",
  listKind: "IngressList",
  singular: "ingress",
  namespaced: true,
  shortNames: ["ing"],
  verbs: STANDARD_VERBS,
  subresources: { status: { kind: "Ingress", verbs: ["get", "patch", "update"] } },
  strategy: {
    validate: validateIngress,
    warningsOnCreate: (obj) =>
      obj.metadata.annotations?.[CLASS_ANNOTATION] !== undefined && obj.spec?.ingressClassName == null
        ? [`annotation "${CLASS_ANNOTATION}" is deprecated, please use 'spec.ingressClassName' instead`]
        : [],
    prepareForCreate: (obj) => {
      obj.status = {};
    },
    generation: true,
    columns: [
      nameColumn,
      column(
        "Class",
        "string",
        "The name of the IngressClass resource that should be used for additional configuration",
        (o) => o.spec?.ingressClassName || "<none>",
      ),
      column(
        "Hosts",
        "string",
        "Hosts that incoming requests are matched against before the ingress rule",
        hostsCell,
      ),
      column(
        "Address",
        "string",
        "Address is a list containing ingress points for the load-balancer",
        addressCell,
      ),
      column("Ports", "string", "Ports of TLS configurations that open", (o) =>
        list(o.spec?.tls).length ? "80, 443" : "80",
      ),
      ageColumn,
    ],
  },
};

export const ingressclasses: ResourceDef = {
  group: "networking.k8s.io",
  version: "v1",
  resource: "ingressclasses",
  kind: "IngressClass",
  listKind: "IngressClassList",
  singular: "ingressclass",
  namespaced: false,
  verbs: STANDARD_VERBS,
  strategy: {
    defaults: (obj) => {
      const p = obj.spec?.parameters;
      if (isObject(p) && p.scope == null) p.scope = "Cluster";
    },
    validate: validateIngressClass,
    generation: true,
    columns: [
      nameColumn,
      column(
        "Controller",
        "string",
        "Controller that is responsible for handling this class",
        (o) => o.spec?.controller ?? "",
      ),
      column("Parameters", "string", "A reference to a resource with additional parameters", (o) => {
        const p = o.spec?.parameters;
        if (!isObject(p)) return "<none>";
        return `${p.kind}${p.apiGroup ? `.${p.apiGroup}` : ""}/${p.name}`;
      }),
      ageColumn,
    ],
  },
};

export const networkpolicies: ResourceDef = {
  group: "networking.k8s.io",
  version: "v1",
  resource: "networkpolicies",
  kind: "NetworkPolicy",
  listKind: "NetworkPolicyList",
  singular: "networkpolicy",
  namespaced: true,
  shortNames: ["netpol"],
  verbs: STANDARD_VERBS,
  strategy: {
    defaults: defaultNetworkPolicy,
    validate: validateNetworkPolicy,
    generation: true,
    columns: [
      nameColumn,
      column(
        "Pod-Selector",
        "string",
        "Selects the pods to which this NetworkPolicy object applies.  The array of ingress rules is applied to any pods selected by this field. Multiple network policies can select the same set of pods.  In this case, the ingress rules for each are combined additively. This field is NOT optional and follows standard label selector semantics. An empty podSelector matches all pods in this namespace.",
        (o) => formatLabelSelector(o.spec?.podSelector),
      ),
      ageColumn,
    ],
  },
};
