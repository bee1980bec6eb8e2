// LimitRanger (upstream plugin/pkg/admission/limitranger): the namespace's LimitRanges give
// containers default requests and limits (recorded in the kubernetes.io/limit-ranger
// annotation) and bound what containers and pods may ask for.
import type { KubeObject } from "../../api/types";
import type { AdmissionPlugin } from "./index";
import {
  admissionForbidden,
  cachedListIn,
  coreDef,
  formatQuantity,
  isCore,
  isObj,
  podContainers,
  qty,
} from "./util";

export const LIMIT_RANGER_ANNOTATION = "kubernetes.io/limit-ranger";

const resourcesOf = (c: Record<string, any>) => (isObj(c.resources) ? c.resources : (c.resources = {}));

/** Fills missing requests and limits from every Container item; true when something was set. */
export function applyLimitRangeDefaults(pod: KubeObject, ranges: KubeObject[]): boolean {
  const notes: string[] = [];
  for (const { c, kind } of podContainers(pod.spec, false)) {
    const setReq: string[] = [];
    const setLim: string[] = [];
    for (const lr of ranges) {
      for (const item of Array.isArray(lr.spec?.limits) ? lr.spec.limits : []) {
        if (item?.type !== "Container") continue;
        const res = resourcesOf(c);
        for (const [k, v] of Object.entries(isObj(item.default) ? item.default : {})) {
          if (isObj(res.limits) && k in res.limits) continue;
          res.limits = { ...(res.limits ?? {}), [k]: v };
          setLim.push(k);
        }
        for (const [k, v] of Object.entries(isObj(item.defaultRequest) ? item.defaultRequest : {})) {
          if (isObj(res.requests) && k in res.requests) continue;
          res.requests = { ...(res.requests ?? {}), [k]: v };
          setReq.push(k);
        }
      }
    }
    if (setReq.length) notes.push(`${setReq.sort().join(", ")} request for ${kind} ${c.name}`);
    if (setLim.length) notes.push(`${setLim.sort().join(", ")} limit for ${kind} ${c.name}`);
  }
  if (!notes.length) return false;
  pod.metadata.annotations = {
    ...(pod.metadata.annotations ?? {}),
    [LIMIT_RANGER_ANNOTATION]: `LimitRanger plugin set: ${notes.join("; ")}`,
  };
  return true;
}

type Amounts = Record<string, string | undefined>;

function checkBounds(item: any, scope: string, requests: Amounts, limits: Amounts, errs: string[]): void {
  for (const [k, min] of Object.entries(isObj(item.min) ? item.min : {})) {
    const r = requests[k];
    if (r === undefined) errs.push(`minimum ${k} usage per ${scope} is ${min}.  No request is specified`);
    else if (qty(r) < qty(min)) errs.push(`minimum ${k} usage per ${scope} is ${min}, but request is ${r}`);
  }
  for (const [k, max] of Object.entries(isObj(item.max) ? item.max : {})) {
    const l = limits[k];
    if (l === undefined) errs.push(`maximum ${k} usage per ${scope} is ${max}.  No limit is specified`);
    else if (qty(l) > qty(max)) errs.push(`maximum ${k} usage per ${scope} is ${max}, but limit is ${l}`);
  }
  for (const [k, ratio] of Object.entries(
    isObj(item.maxLimitRequestRatio) ? item.maxLimitRequestRatio : {},
  )) {
    const r = requests[k];
    const l = limits[k];
    const head = `${k} max limit to request ratio per ${scope} is ${ratio}`;
    if (r === undefined || qty(r) === 0) errs.push(`${head}, but no request is specified or request is 0`);
    else if (l === undefined) errs.push(`${head}, but no limit is specified`);
    else if (qty(l) / qty(r) > qty(ratio))
      errs.push(`${head}, but provided ratio is ${(qty(l) / qty(r)).toFixed(6)}`);
  }
}

/** Sums of the containers' amounts (init containers count as their maximum), as text. */
function podAmounts(spec: any, part: "requests" | "limits"): Amounts {
  const sum = new Map<string, number>();
  const initMax = new Map<string, number>();
  for (const { c, kind } of podContainers(spec, false)) {
    const m = isObj(c.resources?.[part]) ? c.resources[part] : {};
    for (const [k, v] of Object.entries(m)) {
      if (kind === "init container") initMax.set(k, Math.max(initMax.get(k) ?? 0, qty(v)));
      else sum.set(k, (sum.get(k) ?? 0) + qty(v));
    }
  }
  const out: Amounts = {};
  for (const k of new Set([...sum.keys(), ...initMax.keys()]))
    out[k] = formatQuantity(k, Math.max(sum.get(k) ?? 0, initMax.get(k) ?? 0));
  return out;
}

/** Every violation of the ranges by the pod, in upstream's words. */
export function limitRangeViolations(pod: KubeObject, ranges: KubeObject[]): string[] {
  const errs: string[] = [];
  for (const lr of ranges) {
    for (const item of Array.isArray(lr.spec?.limits) ? lr.spec.limits : []) {
      if (item?.type === "Container") {
        for (const { c } of podContainers(pod.spec, false)) {
          const req = isObj(c.resources?.requests) ? c.resources.requests : {};
          const lim = isObj(c.resources?.limits) ? c.resources.limits : {};
          checkBounds(item, "Container", req, lim, errs);
        }
      } else if (item?.type === "Pod") {
        checkBounds(item, "Pod", podAmounts(pod.spec, "requests"), podAmounts(pod.spec, "limits"), errs);
      }
    }
  }
  return errs;
}

/** PersistentVolumeClaim items bound the storage a claim requests. */
export function claimViolations(pvc: KubeObject, ranges: KubeObject[]): string[] {
  const errs: string[] = [];
  const req = isObj(pvc.spec?.resources?.requests) ? pvc.spec.resources.requests : {};
  for (const lr of ranges)
    for (const item of Array.isArray(lr.spec?.limits) ? lr.spec.limits : []) {
      if (item?.type !== "PersistentVolumeClaim") continue;
      for (const [k, min] of Object.entries(isObj(item.min) ? item.min : {}))
        if (k in req && qty(req[k]) < qty(min))
          errs.push(`minimum ${k} usage per PersistentVolumeClaim is ${min}, but request is ${req[k]}`);
      for (const [k, max] of Object.entries(isObj(item.max) ? item.max : {}))
        if (k in req && qty(req[k]) > qty(max))
          errs.push(`maximum ${k} usage per PersistentVolumeClaim is ${max}, but request is ${req[k]}`);
    }
  return errs;
}

/** utilerrors.NewAggregate's text: one message alone, several in brackets. */
export const aggregate = (errs: string[]) => (errs.length === 1 ? errs[0] : `[${errs.join(", ")}]`);

export const limitRanger: AdmissionPlugin = {
  name: "LimitRanger",
  async mutate(a) {
    if (a.operation !== "CREATE" || !isCore(a, "pods") || !a.object) return;
    const ranges = await cachedListIn(a.w.c.env, coreDef("limitranges"), a.object.metadata.namespace ?? "");
    (a as { limitRanges?: KubeObject[] }).limitRanges = ranges;
    if (ranges.length) applyLimitRangeDefaults(a.object, ranges);
  },
  async validate(a) {
    if (a.operation === "CREATE" && isCore(a, "persistentvolumeclaims") && a.object) {
      const ranges = await cachedListIn(a.w.c.env, coreDef("limitranges"), a.object.metadata.namespace ?? "");
      const errs = claimViolations(a.object, ranges);
      if (errs.length) throw admissionForbidden(a, aggregate(errs));
      return;
    }
    if (a.operation !== "CREATE" || !isCore(a, "pods") || !a.object) return;
    const ranges =
      (a as { limitRanges?: KubeObject[] }).limitRanges ??
      (await cachedListIn(a.w.c.env, coreDef("limitranges"), a.object.metadata.namespace ?? ""));
    const errs = limitRangeViolations(a.object, ranges);
    if (errs.length) throw admissionForbidden(a, aggregate(errs));
  },
};
