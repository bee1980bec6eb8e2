// core/v1 endpoints and podtemplates.

import { field } from "../errors";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { endpointIPErrors } from "../validation/endpoint-ip";
import { formatLabels, validateAnnotations, validateLabels, validateMeta } from "../validation/metadata";
import { isValidPortNum } from "../validation/names";
import { ageColumn, column, containerCells, isObject, nameColumn } from "./common";
import { defaultTemplate } from "./pod-defaults";
import { validatePodSpec } from "./pod-validation";

const PROTOCOLS = ["SCTP", "TCP", "UDP"];

/** formatEndpoints: "ip:port,..." with at most three shown, then " + N more...". */
export function formatEndpoints(o: KubeObject): string {
  const subsets: any[] = Array.isArray(o.subsets) ? o.subsets : [];
  if (subsets.length === 0) return "<none>";
  const list: string[] = [];
  let more = false;
  let count = 0;
  for (const ss of subsets) {
    const ports: any[] = Array.isArray(ss?.ports) && ss.ports.length ? ss.ports : [];
    const addresses: any[] = Array.isArray(ss?.addresses) ? ss.addresses : [];
    if (ports.length === 0) {
      for (const a of addresses) {
        if (list.length === 3) more = true;
        if (!more) list.push(a?.ip ?? "");
        count++;
      }
      continue;
    }
    for (const p of ports) {
      for (const a of addresses) {
        if (list.length === 3) more = true;
        if (!more) list.push(hostPort(a?.ip ?? "", p?.port));
        count++;
      }
    }
  }
  const ret = list.join(",");
  if (more) return `${ret} + ${count - 3} more...`;
  return ret;
}

const hostPort = (ip: string, port: unknown) => (ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`);

export const endpoints: ResourceDef = {
  group: "",
  version: "v1",
  resource: "endpoints",
  kind: "Endpoints",
  listKind: "EndpointsList",
  singular: "endpoints",
  namespaced: true,
  shortNames: ["ep"],
  verbs: STANDARD_VERBS,
  strategy: {
    defaults: (obj) => {
      for (const ss of Array.isArray(obj.subsets) ? obj.subsets : [])
        for (const p of Array.isArray(ss?.ports) ? ss.ports : [])
          if (isObject(p) && !p.protocol) p.protocol = "TCP";
    },
    validate: (obj, old) => {
      const causes = validateMeta(obj, old, { namespaced: true });
      (Array.isArray(obj.subsets) ? obj.subsets : []).forEach((ss: any, i: number) => {
        const p = `subsets[${i}]`;
        for (const key of ["addresses", "notReadyAddresses"])
          (Array.isArray(ss?.[key]) ? ss[key] : []).forEach((a: any, j: number) => {
            if (!a?.ip) causes.push(field.required(`${p}.${key}[${j}].ip`));
            else
              for (const msg of endpointIPErrors(String(a.ip)))
                causes.push(field.invalid(`${p}.${key}[${j}].ip`, a.ip, msg));
          });
        (Array.isArray(ss?.ports) ? ss.ports : []).forEach((port: any, j: number) => {
          const pp = `${p}.ports[${j}]`;
          for (const msg of isValidPortNum(port?.port))
            causes.push(field.invalid(`${pp}.port`, port?.port, msg));
          if (!port?.protocol) causes.push(field.required(`${pp}.protocol`));
          else if (!PROTOCOLS.includes(port.protocol))
            causes.push(field.notSupported(`${pp}.protocol`, port.protocol, PROTOCOLS));
        });
      });
      return causes;
    },
    columns: [
      nameColumn,
      column(
        "Endpoints",
        "string",
        "The set of all endpoints is the union of all subsets. Addresses are placed into subsets according to the IPs they share. A single address with multiple ports, some of which are ready and some of which are not (because they come from different containers) will result in the address being displayed in different subsets for the different ports. No address will appear in both Addresses and NotReadyAddresses in the same subset. Sets of addresses and ports that comprise a service.",
        formatEndpoints,
      ),
      ageColumn,
    ],
    generation: false,
  },
};

export const podtemplates: ResourceDef = {
  group: "",
  version: "v1",
  resource: "podtemplates",
  kind: "PodTemplate",
  listKind: "PodTemplateList",
  singular: "podtemplate",
  namespaced: true,
  verbs: STANDARD_VERBS,
  strategy: {
    defaults: (obj) => defaultTemplate(obj.template),
    validate: (obj, old) => {
      const causes = validateMeta(obj, old, { namespaced: true });
      const t = isObject(obj.template) ? obj.template : {};
      causes.push(...validateLabels(t.metadata?.labels, "template.metadata.labels"));
      causes.push(...validateAnnotations(t.metadata?.annotations, "template.metadata.annotations"));
      causes.push(...validatePodSpec(t.spec, "template.spec"));
      return causes;
    },
    columns: [
      nameColumn,
      column(
        "Containers",
        "string",
        "Names of each container in the template.",
        (o) => containerCells(o.template?.spec?.containers).names,
      ),
      column(
        "Images",
        "string",
        "Images referenced by each container in the template.",
        (o) => containerCells(o.template?.spec?.containers).images,
      ),
      column("Pod Labels", "string", "The labels for the pod template.", (o) =>
        formatLabels(o.template?.metadata?.labels),
      ),
    ],
    generation: true,
  },
};
