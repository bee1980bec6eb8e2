// workers/audit: audit.k8s.io/v1 events for every request the policy asks for.
export { microTime } from "../../api/time";
export { buildEvent, effectiveLevel, isSensitive } from "./event";
export {
  type AuditOptions,
  addAuditAnnotation,
  audit,
  auditIDOf,
  recordAuditRequestObject,
  setAuditRequestObject,
} from "./middleware";
export { AuditPolicyError, evaluatePolicy, parseAuditPolicy, policyFromEnv, ruleMatches } from "./policy";
export { consoleSink, isolateRing, RingSink } from "./sink";
export type { AuditEvent, AuditPolicy, AuditSink, Level, PolicyRule, Stage } from "./types";
