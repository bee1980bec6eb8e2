// core/v1 services.

import { field, type StatusCause } from "../errors";
import type { ResourceDef } from "../resource";
import type { KubeObject } from "../types";
import { formatLabels, validateLabels, validateMeta } from "../validation/metadata";
import {
  isDNS1123Label,
  isDNS1123Subdomain,
  isIP,
  isValidPortName,
  isValidPortNum,
  nameIsDNS1035Label,
} from "../validation/names";
import { ageColumn, column, ensureObject, isObject, nameColumn } from "./common";
import { prepareServiceUpdate, serviceAllocator } from "./service-allocator";

const TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
const AFFINITIES = ["ClientIP", "None"];
const PROTOCOLS = ["SCTP", "TCP", "UDP"];
const FAMILY_POLICIES = ["PreferDualStack", "RequireDualStack", "SingleStack"];
const FAMILIES = ["IPv4", "IPv6"];
const arr = (v: unknown): any[] => (Array.isArray(v) ? v : []);

/** A headless Service without a selector: it takes every IP family the cluster has. */
const selectorlessHeadless = (spec: any) =>
  spec.clusterIP === "None" && Object.keys(spec.selector ?? {}).length === 0;

const externallyAccessible = (spec: any) =>
  spec.type === "LoadBalancer" ||
  spec.type === "NodePort" ||
  (spec.type === "ClusterIP" && arr(spec.externalIPs).length > 0);

export function defaultService(obj: KubeObject): void {
  const spec = ensureObject(obj, "spec");
  if (!spec.sessionAffinity) spec.sessionAffinity = "None";
  if (spec.sessionAffinity === "None") delete spec.sessionAffinityConfig;
  if (spec.sessionAffinity === "ClientIP" && spec.sessionAffinityConfig?.clientIP?.timeoutSeconds == null)
    spec.sessionAffinityConfig = { clientIP: { timeoutSeconds: 10800 } };
  if (!spec.type) spec.type = "ClusterIP";
  for (const p of arr(spec.ports)) {
    if (!isObject(p)) continue;
    if (!p.protocol) p.protocol = "TCP";
    if (p.targetPort === undefined || p.targetPort === null || p.targetPort === 0 || p.targetPort === "")
      p.targetPort = p.port;
  }
  if (externallyAccessible(spec) && !spec.externalTrafficPolicy) spec.externalTrafficPolicy = "Cluster";
  if (spec.internalTrafficPolicy == null && ["NodePort", "LoadBalancer", "ClusterIP"].includes(spec.type))
    spec.internalTrafficPolicy = "Cluster";
  if (spec.type === "LoadBalancer" && spec.allocateLoadBalancerNodePorts == null)
    spec.allocateLoadBalancerNodePorts = true;
  // clusterIP and clusterIPs mirror each other (upstream's REST layer keeps them in step)
  if (spec.type !== "ExternalName") {
    if (spec.clusterIP && arr(spec.clusterIPs).length === 0) spec.clusterIPs = [spec.clusterIP];
    else if (!spec.clusterIP && arr(spec.clusterIPs).length > 0) spec.clusterIP = spec.clusterIPs[0];
  }
}

function prepareService(obj: KubeObject): void {
  const spec = ensureObject(obj, "spec");
  if (spec.type !== "ExternalName") {
    if (!spec.ipFamilyPolicy)
      spec.ipFamilyPolicy = selectorlessHeadless(spec) ? "RequireDualStack" : "SingleStack";
    if (arr(spec.ipFamilies).length === 0) spec.ipFamilies = ["IPv4"];
  }
  obj.status = { loadBalancer: {} };
}

/** IP families, for a cluster that has IPv4 service addresses only. */
function validateFamilies(spec: any): StatusCause[] {
  const causes: StatusCause[] = [];
  if (spec.type === "ExternalName") return causes;
  const policy = spec.ipFamilyPolicy;
  if (policy != null && !FAMILY_POLICIES.includes(policy))
    causes.push(field.notSupported("spec.ipFamilyPolicy", policy, FAMILY_POLICIES));
  else if (policy === "RequireDualStack" && !selectorlessHeadless(spec))
    causes.push(
      field.invalid("spec.ipFamilyPolicy", policy, "this cluster is not configured for dual-stack services"),
    );
  const seen = new Set<string>();
  arr(spec.ipFamilies).forEach((f, i) => {
    const path = `spec.ipFamilies[${i}]`;
    if (!FAMILIES.includes(f)) causes.push(field.notSupported(path, f, FAMILIES));
    else if (seen.has(f)) causes.push(field.duplicate(path, f));
    else if (f !== "IPv4") causes.push(field.invalid(path, f, "not configured on this cluster"));
    seen.add(f);
  });
  return causes;
}

function validatePorts(spec: any): StatusCause[] {
  const causes: StatusCause[] = [];
  const ports = arr(spec.ports);
  const names = new Set<string>();
  ports.forEach((p, i) => {
    const path = `spec.ports[${i}]`;
    if (!isObject(p)) return;
    if (ports.length > 1 && !p.name) causes.push(field.required(`${path}.name`));
    if (p.name) {
      for (const msg of isDNS1123Label(p.name)) causes.push(field.invalid(`${path}.name`, p.name, msg));
      if (names.has(p.name)) causes.push(field.duplicate(`${path}.name`, p.name));
      names.add(p.name);
    }
    for (const msg of isValidPortNum(p.port)) causes.push(field.invalid(`${path}.port`, p.port, msg));
    if (!p.protocol) causes.push(field.required(`${path}.protocol`));
    else if (!PROTOCOLS.includes(p.protocol))
      causes.push(field.notSupported(`${path}.protocol`, p.protocol, PROTOCOLS));
    if (typeof p.targetPort === "number") {
      for (const msg of isValidPortNum(p.targetPort))
        causes.push(field.invalid(`${path}.targetPort`, p.targetPort, msg));
    } else if (typeof p.targetPort === "string") {
      for (const msg of isValidPortName(p.targetPort))
        causes.push(field.invalid(`${path}.targetPort`, p.targetPort, msg));
    }
    if (p.nodePort) {
      if (spec.type === "ClusterIP")
        causes.push(field.forbidden(`${path}.nodePort`, "may not be used when `type` is 'ClusterIP'"));
      else
        for (const msg of isValidPortNum(p.nodePort))
          causes.push(field.invalid(`${path}.nodePort`, p.nodePort, msg));
    }
  });
  return causes;
}

export function validateService(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: true, name: nameIsDNS1035Label });
  const spec = isObject(obj.spec) ? obj.spec : {};
  const headless = spec.clusterIP === "None";
  if (!spec.type) causes.push(field.required("spec.type"));
  else if (!TYPES.includes(spec.type)) causes.push(field.notSupported("spec.type", spec.type, TYPES));
  if (spec.sessionAffinity && !AFFINITIES.includes(spec.sessionAffinity))
    causes.push(field.notSupported("spec.sessionAffinity", spec.sessionAffinity, AFFINITIES));
  if (spec.type === "ExternalName") {
    if (spec.clusterIP)
      causes.push(field.forbidden("spec.clusterIP", "may not be set for ExternalName services"));
    if (!spec.externalName) causes.push(field.required("spec.externalName"));
    else
      for (const msg of isDNS1123Subdomain(String(spec.externalName).replace(/\.$/, "")))
        causes.push(field.invalid("spec.externalName", spec.externalName, msg));
  } else {
    if (arr(spec.ports).length === 0 && !headless) causes.push(field.required("spec.ports"));
    arr(spec.clusterIPs).forEach((ip, i) => {
      if (ip !== "None" && !isIP(String(ip)))
        causes.push(
          field.invalid(`spec.clusterIPs[${i}]`, ip, "must be empty, 'None', or a valid IP address"),
        );
    });
    if (
      spec.clusterIP &&
      spec.clusterIP !== "None" &&
      !isIP(spec.clusterIP) &&
      arr(spec.clusterIPs).length === 0
    )
      causes.push(
        field.invalid("spec.clusterIP", spec.clusterIP, "must be empty, 'None', or a valid IP address"),
      );
  }
  causes.push(...validatePorts(spec));
  causes.push(...validateFamilies(spec));
  causes.push(...validateLabels(spec.selector, "spec.selector"));
  arr(spec.externalIPs).forEach((ip, i) => {
    if (!isIP(String(ip)))
      causes.push(field.invalid(`spec.externalIPs[${i}]`, ip, "must be a valid IP address"));
  });
  if (old) {
    const oldSpec = isObject(old.spec) ? old.spec : {};
    const oldIP = arr(oldSpec.clusterIPs)[0] ?? oldSpec.clusterIP;
    const newIP = arr(spec.clusterIPs)[0] ?? spec.clusterIP;
    if (oldSpec.type !== "ExternalName" && spec.type !== "ExternalName" && oldIP && newIP && oldIP !== newIP)
      causes.push(
        field.invalid(
          "spec.clusterIPs[0]",
          arr(spec.clusterIPs).length ? spec.clusterIPs : [newIP],
          "may not change once set",
        ),
      );
  }
  return causes;
}

function externalIP(o: KubeObject): string {
  const spec = o.spec ?? {};
  const ext = arr(spec.externalIPs);
  switch (spec.type) {
    case "ClusterIP":
    case "NodePort":
      return ext.length ? ext.join(",") : "<none>";
    case "LoadBalancer": {
      const lb = [
        ...new Set(
          arr(o.status?.loadBalancer?.ingress)
            .map((i) => i?.ip || i?.hostname)
            .filter(Boolean),
        ),
      ];
      if (ext.length) return [...lb, ...ext].join(",");
      return lb.length ? lb.join(",") : "<pending>";
    }
    case "ExternalName":
      return spec.externalName ?? "";
  }
  return "<unknown>";
}

function portString(o: KubeObject): string {
  const s = arr(o.spec?.ports)
    .map((p) => (p?.nodePort > 0 ? `${p.port}:${p.nodePort}/${p.protocol}` : `${p?.port}/${p?.protocol}`))
    .join(",");
  return s || "<none>";
}

export const services: ResourceDef = {
  group: "",
  version: "v1",
  resource: "services",
  kind: "Service",
  listKind: "ServiceList",
  singular: "service",
  namespaced: true,
  shortNames: ["svc"],
  categories: ["all"],
  verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
  subresources: {
    proxy: { kind: "ServiceProxyOptions", verbs: ["create", "delete", "get", "patch", "update"] },
    status: { kind: "Service", verbs: ["get", "patch", "update"] },
  },
  strategy: {
    defaults: defaultService,
    prepareForCreate: prepareService,
    prepareForUpdate: prepareServiceUpdate,
    allocator: serviceAllocator,
    validate: validateService,
    columns: [
      nameColumn,
      column(
        "Type",
        "string",
        "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer.",
        (o) => o.spec?.type ?? "",
      ),
      column(
        "Cluster-IP",
        "string",
        "clusterIP is the IP address of the service and is usually assigned randomly.",
        (o) => arr(o.spec?.clusterIPs)[0] ?? (o.spec?.clusterIP || "<none>"),
      ),
      column(
        "External-IP",
        "string",
        "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.",
        externalIP,
      ),
      column(
        "Port(s)",
        "string",
        "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies",
        portString,
      ),
      ageColumn,
      column(
        "Selector",
        "string",
        "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify.",
        (o) => formatLabels(o.spec?.selector),
        1,
      ),
    ],
    fields: (o) => ({ "spec.clusterIP": o.spec?.clusterIP ?? "", "spec.type": o.spec?.type ?? "" }),
    generation: false,
  },
};
