// Generic ObjectMeta checks (upstream's ValidateObjectMeta / ValidateObjectMetaUpdate),
// label and annotation rules, label selectors. Reused by every strategy.

import { field, type StatusCause } from "../errors";
import type { KubeObject, ObjectMeta } from "../types";
import {
  isQualifiedName,
  isValidLabelValue,
  type NameValidator,
  nameIsDNSSubdomain,
  validateNamespaceName,
} from "./names";

export const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;

/** A cause for a reference to something that does not exist (field.NotFound). */
export const notFoundCause = (path: string, value: unknown): StatusCause => ({
  type: "FieldValueNotFound",
  field: path,
  message: `Not found: ${JSON.stringify(value)}`,
});

/** upstream's ValidateImmutableField */
export function immutable(newValue: unknown, oldValue: unknown, path: string): StatusCause[] {
  return deepEqual(newValue, oldValue) ? [] : [field.invalid(path, newValue, "field is immutable")];
}

/**
 * Semantic equality as upstream compares API objects: null and absent are the same,
 * and so are an empty list and an absent one.
 */
export function deepEqual(a: unknown, b: unknown): boolean {
  const na = a === null || (Array.isArray(a) && a.length === 0) ? undefined : a;
  const nb = b === null || (Array.isArray(b) && b.length === 0) ? undefined : b;
  if (na === nb) return true;
  if (na === undefined || nb === undefined || typeof na !== "object" || typeof nb !== "object") return false;
  a = na;
  b = nb;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((v, i) => deepEqual(v, bb[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const keys = new Set([...Object.keys(ao), ...Object.keys(bo)]);
  for (const k of keys) if (!deepEqual(ao[k], bo[k])) return false;
  return true;
}

export function validateLabels(labels: Record<string, string> | undefined, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  for (const [k, v] of Object.entries(labels ?? {})) {
    for (const msg of isQualifiedName(k)) causes.push(field.invalid(path, k, msg));
    for (const msg of isValidLabelValue(String(v))) causes.push(field.invalid(`${path}[${k}]`, v, msg));
  }
  return causes;
}

export function validateAnnotations(
  annotations: Record<string, string> | undefined,
  path: string,
): StatusCause[] {
  const causes: StatusCause[] = [];
  let size = 0;
  for (const [k, v] of Object.entries(annotations ?? {})) {
    for (const msg of isQualifiedName(k.toLowerCase())) causes.push(field.invalid(path, k, msg));
    size += utf8Length(k) + utf8Length(String(v));
  }
  if (size > TOTAL_ANNOTATION_SIZE_LIMIT) causes.push(field.tooLong(path, TOTAL_ANNOTATION_SIZE_LIMIT));
  return causes;
}

export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

export interface MetaOptions {
  namespaced: boolean;
  /** defaults to DNS-1123 subdomain */
  name?: NameValidator;
}

export function validateObjectMeta(
  meta: ObjectMeta | undefined,
  opts: MetaOptions,
  path = "metadata",
): StatusCause[] {
  const m = meta ?? {};
  const nameFn = opts.name ?? nameIsDNSSubdomain;
  const causes: StatusCause[] = [];
  if (m.generateName) {
    for (const msg of nameFn(m.generateName, true))
      causes.push(field.invalid(`${path}.generateName`, m.generateName, msg));
  }
  if (!m.name) causes.push(field.required(`${path}.name`, "name or generateName is required"));
  else for (const msg of nameFn(m.name, false)) causes.push(field.invalid(`${path}.name`, m.name, msg));
  if (opts.namespaced) {
    if (!m.namespace) causes.push(field.required(`${path}.namespace`));
    else
      for (const msg of validateNamespaceName(m.namespace, false))
        causes.push(field.invalid(`${path}.namespace`, m.namespace, msg));
  } else if (m.namespace) {
    causes.push(field.forbidden(`${path}.namespace`, "not allowed on this type"));
  }
  if (typeof m.generation === "number" && m.generation < 0)
    causes.push(field.invalid(`${path}.generation`, m.generation, "must be greater than or equal to 0"));
  causes.push(...validateLabels(m.labels, `${path}.labels`));
  causes.push(...validateAnnotations(m.annotations, `${path}.annotations`));
  causes.push(...validateFinalizers(m.finalizers, `${path}.finalizers`));
  causes.push(...validateOwnerReferences(m.ownerReferences, `${path}.ownerReferences`));
  return causes;
}

export function validateFinalizers(finalizers: string[] | undefined, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  const seen = new Set<string>();
  (finalizers ?? []).forEach((f) => {
    for (const msg of isQualifiedName(f)) causes.push(field.invalid(path, f, msg));
    if (seen.has(f)) causes.push(field.duplicate(path, f));
    seen.add(f);
  });
  return causes;
}

function validateOwnerReferences(refs: ObjectMeta["ownerReferences"], path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  let controller = "";
  for (const r of refs ?? []) {
    // upstream reports these on the list's path, not per index
    const version = (r.apiVersion ?? "").split("/").pop() ?? "";
    if (!version)
      causes.push(field.invalid(`${path}.apiVersion`, r.apiVersion ?? "", "version must not be empty"));
    if (!r.kind) causes.push(field.invalid(`${path}.kind`, r.kind ?? "", "must not be empty"));
    if (!r.name) causes.push(field.invalid(`${path}.name`, r.name ?? "", "must not be empty"));
    if (!r.uid) causes.push(field.invalid(`${path}.uid`, r.uid ?? "", "must not be empty"));
    if (r.controller) {
      const current = `${r.kind}/${r.name}`;
      if (controller)
        causes.push(
          field.invalid(
            path,
            refs,
            `Only one reference can have Controller set to true. Found "true" in references for ${controller} and ${current}`,
          ),
        );
      else controller = current;
    }
  }
  return causes;
}

/** upstream's ValidateObjectMetaUpdate: identity fields are immutable. */
export function validateObjectMetaUpdate(
  meta: ObjectMeta,
  old: ObjectMeta,
  path = "metadata",
): StatusCause[] {
  const causes: StatusCause[] = [];
  causes.push(...immutable(meta.name, old.name, `${path}.name`));
  causes.push(...immutable(meta.namespace ?? "", old.namespace ?? "", `${path}.namespace`));
  // uid and creationTimestamp: upstream restores them from the old object before validating,
  // so only a value that is present and different is an error here.
  if (old.uid && meta.uid) causes.push(...immutable(meta.uid, old.uid, `${path}.uid`));
  if (old.creationTimestamp && meta.creationTimestamp)
    causes.push(...immutable(meta.creationTimestamp, old.creationTimestamp, `${path}.creationTimestamp`));
  if (old.deletionTimestamp && meta.deletionTimestamp !== old.deletionTimestamp)
    causes.push(
      field.invalid(
        `${path}.deletionTimestamp`,
        meta.deletionTimestamp ?? null,
        "field is immutable; may only be changed via deletion",
      ),
    );
  causes.push(...validateLabels(meta.labels, `${path}.labels`));
  causes.push(...validateAnnotations(meta.annotations, `${path}.annotations`));
  causes.push(...validateFinalizers(meta.finalizers, `${path}.finalizers`));
  causes.push(...validateOwnerReferences(meta.ownerReferences, `${path}.ownerReferences`));
  return causes;
}

/** The common create/update metadata check for a kind. */
export function validateMeta(obj: KubeObject, old: KubeObject | undefined, opts: MetaOptions): StatusCause[] {
  return old
    ? validateObjectMetaUpdate(obj.metadata ?? {}, old.metadata ?? {})
    : validateObjectMeta(obj.metadata, opts);
}

// ---- label selectors -------------------------------------------------------

export interface LabelSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

export function validateLabelSelector(sel: LabelSelector | undefined, path: string): StatusCause[] {
  if (!sel) return [];
  const causes: StatusCause[] = [];
  (sel.matchExpressions ?? []).forEach((r, i) => {
    const p = `${path}.matchExpressions[${i}]`;
    const n = r.values?.length ?? 0;
    switch (r.operator) {
      case "In":
      case "NotIn":
        if (n === 0)
          causes.push(field.required(`${p}.values`, "must be specified when `operator` is 'In' or 'NotIn'"));
        break;
      case "Exists":
      case "DoesNotExist":
        if (n > 0)
          causes.push(
            field.forbidden(
              `${p}.values`,
              "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            ),
          );
        break;
      default:
        causes.push(field.invalid(`${p}.operator`, r.operator, "not a valid selector operator"));
    }
    for (const msg of isQualifiedName(r.key ?? "")) causes.push(field.invalid(`${p}.key`, r.key, msg));
  });
  causes.push(...validateLabels(sel.matchLabels, `${path}.matchLabels`));
  return causes;
}

export function selectorMatches(
  sel: LabelSelector | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  if (!sel) return false;
  const l = labels ?? {};
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (l[k] !== v) return false;
  for (const r of sel.matchExpressions ?? []) {
    const has = Object.hasOwn(l, r.key);
    const vals = r.values ?? [];
    switch (r.operator) {
      case "In":
        if (!has || !vals.includes(l[r.key])) return false;
        break;
      case "NotIn":
        if (has && vals.includes(l[r.key])) return false;
        break;
      case "Exists":
        if (!has) return false;
        break;
      case "DoesNotExist":
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

/** metav1.FormatLabelSelector: "app=x,tier in (a,b)" sorted by key; "<none>" for empty, "<error>" for bad. */
export function formatLabelSelector(sel: LabelSelector | undefined | null): string {
  if (!sel) return "<none>";
  const reqs: { key: string; text: string }[] = [];
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) reqs.push({ key: k, text: `${k}=${v}` });
  for (const r of sel.matchExpressions ?? []) {
    const vals = [...new Set(r.values ?? [])].sort().join(",");
    const text =
      r.operator === "In"
        ? `${r.key} in (${vals})`
        : r.operator === "NotIn"
          ? `${r.key} notin (${vals})`
          : r.operator === "Exists"
            ? r.key
            : r.operator === "DoesNotExist"
              ? `!${r.key}`
              : undefined;
    if (text === undefined) return "<error>";
    reqs.push({ key: r.key, text });
  }
  reqs.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const s = reqs.map((r) => r.text).join(",");
  return s === "" ? "<none>" : s;
}

/** labels.FormatLabels: sorted "k=v,k2=v2", "<none>" when empty. */
export function formatLabels(labels: Record<string, string> | undefined | null): string {
  const keys = Object.keys(labels ?? {}).sort();
  if (keys.length === 0) return "<none>";
  return keys.map((k) => `${k}=${labels?.[k]}`).join(",");
}
