// core/v1 configmaps and secrets.

import { field, type StatusCause } from "../errors";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { deepEqual, validateMeta } from "../validation/metadata";
import { isConfigMapKey } from "../validation/names";
import { ageColumn, column, countKeys, isObject, nameColumn } from "./common";

export const MAX_DATA_SIZE = 1024 * 1024;

/** A Secret holding a legacy service account token, and the annotations naming its account. */
export const SA_TOKEN_SECRET_TYPE = "kubernetes.io/service-account-token";
export const SA_NAME_ANNOTATION = "kubernetes.io/service-account.name";
export const SA_UID_ANNOTATION = "kubernetes.io/service-account.uid";
/** The ConfigMap every namespace holds with the cluster's root CA (key ca.crt). */
export const ROOT_CA_CONFIGMAP = "kube-root-ca.crt";

const utf8 = new TextEncoder();
const entries = (v: unknown): [string, any][] => (isObject(v) ? Object.entries(v) : []);
/** Decoded size of base64 text. */
const base64Size = (s: string) => {
  const clean = s.replace(/\s/g, "");
  const pad = clean.endsWith("==") ? 2 : clean.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor((clean.length * 3) / 4) - pad);
};

function immutableData(obj: KubeObject, old: KubeObject, keys: string[]): StatusCause[] {
  const causes: StatusCause[] = [];
  if (old.immutable !== true) return causes;
  if (obj.immutable !== true)
    causes.push(field.forbidden("immutable", "field is immutable when `immutable` is set"));
  for (const k of keys)
    if (!deepEqual(obj[k] ?? {}, old[k] ?? {}))
      causes.push(field.forbidden(k, "field is immutable when `immutable` is set"));
  return causes;
}

export function validateConfigMap(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: true });
  let size = 0;
  for (const [k, v] of entries(obj.data)) {
    for (const msg of isConfigMapKey(k)) causes.push(field.invalid(`data[${k}]`, k, msg));
    if (isObject(obj.binaryData) && k in obj.binaryData)
      causes.push(field.invalid(`data[${k}]`, k, "duplicate of key present in binaryData"));
    size += utf8.encode(String(v ?? "")).length;
  }
  for (const [k, v] of entries(obj.binaryData)) {
    for (const msg of isConfigMapKey(k)) causes.push(field.invalid(`binaryData[${k}]`, k, msg));
    if (isObject(obj.data) && k in obj.data)
      causes.push(field.invalid(`binaryData[${k}]`, k, "duplicate of key present in data"));
    size += base64Size(String(v ?? ""));
  }
  if (size > MAX_DATA_SIZE) causes.push(field.tooLong("", MAX_DATA_SIZE));
  if (old) causes.push(...immutableData(obj, old, ["data", "binaryData"]));
  return causes;
}

const requiredKeys: Record<string, string[]> = {
  "kubernetes.io/dockercfg": [".dockercfg"],
  "kubernetes.io/dockerconfigjson": [".dockerconfigjson"],
  "kubernetes.io/ssh-auth": ["ssh-privatekey"],
  "kubernetes.io/tls": ["tls.crt", "tls.key"],
};

export function validateSecret(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: true });
  const data = isObject(obj.data) ? obj.data : {};
  let size = 0;
  for (const [k, v] of Object.entries(data)) {
    for (const msg of isConfigMapKey(k)) causes.push(field.invalid(`data[${k}]`, k, msg));
    size += base64Size(String(v ?? ""));
  }
  if (size > MAX_DATA_SIZE) causes.push(field.tooLong("data", MAX_DATA_SIZE));
  const type: string = obj.type ?? "Opaque";
  if (type === SA_TOKEN_SECRET_TYPE) {
    if (!obj.metadata?.annotations?.[SA_NAME_ANNOTATION])
      causes.push(field.required(`metadata.annotations[${SA_NAME_ANNOTATION}]`));
  } else if (type === "kubernetes.io/basic-auth") {
    if (!("username" in data) && !("password" in data)) {
      causes.push(field.required("data[username]"), field.required("data[password]"));
    }
  }
  for (const key of requiredKeys[type] ?? []) if (!(key in data)) causes.push(field.required(`data[${key}]`));
  if (old) {
    if ((old.type ?? "Opaque") !== type) causes.push(field.invalid("type", type, "field is immutable"));
    causes.push(...immutableData(obj, old, ["data"]));
  }
  return causes;
}

export const configmaps: ResourceDef = {
  group: "",
  version: "v1",
  resource: "configmaps",
  kind: "ConfigMap",
  listKind: "ConfigMapList",
  singular: "configmap",
  namespaced: true,
  shortNames: ["cm"],
  verbs: STANDARD_VERBS,
  strategy: {
    validate: validateConfigMap,
    columns: [
      nameColumn,
      column(
        "Data",
        "string",
        "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.",
        (o) => countKeys(o.data) + countKeys(o.binaryData),
      ),
      ageColumn,
    ],
    generation: false,
  },
};

export const secrets: ResourceDef = {
  group: "",
  version: "v1",
  resource: "secrets",
  kind: "Secret",
  listKind: "SecretList",
  singular: "secret",
  namespaced: true,
  verbs: STANDARD_VERBS,
  strategy: {
    defaults: (obj) => {
      if (!obj.type) obj.type = "Opaque";
    },
    validate: validateSecret,
    columns: [
      nameColumn,
      column(
        "Type",
        "string",
        "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types",
        (o) => o.type ?? "",
      ),
      column(
        "Data",
        "string",
        "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4",
        (o) => countKeys(o.data),
      ),
      ageColumn,
    ],
    fields: (o) => ({ type: o.type ?? "" }),
    generation: false,
  },
};
