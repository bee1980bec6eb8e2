// Smaller pod-spec checks: probes and lifecycle handlers, tolerations, env names.

import { field, type StatusCause } from "../errors";
import { isQualifiedName, isValidLabelValue, isValidPortName, isValidPortNum } from "../validation/names";
import { isObject } from "./common";

const HANDLER_KINDS = ["exec", "httpGet", "tcpSocket", "grpc", "sleep"];

function portNumOrName(port: unknown, path: string): StatusCause[] {
  if (typeof port === "number") return isValidPortNum(port).map((m) => field.invalid(path, port, m));
  if (typeof port === "string") {
    if (/^\d+$/.test(port)) return isValidPortNum(Number(port)).map((m) => field.invalid(path, port, m));
    return isValidPortName(port).map((m) => field.invalid(path, port, m));
  }
  return [field.required(path)];
}

/** validateHandler: exactly one handler type, with valid ports and schemes. */
export function validateHandler(h: Record<string, any>, path: string, kinds = HANDLER_KINDS): StatusCause[] {
  const causes: StatusCause[] = [];
  const present = kinds.filter((k) => isObject(h[k]));
  if (present.length === 0) return [field.required(path, "must specify a handler type")];
  for (const extra of present.slice(1))
    causes.push(field.forbidden(`${path}.${extra}`, "may not specify more than 1 handler type"));
  if (isObject(h.httpGet)) {
    causes.push(...portNumOrName(h.httpGet.port, `${path}.httpGet.port`));
    if (h.httpGet.scheme && !["HTTP", "HTTPS"].includes(h.httpGet.scheme))
      causes.push(field.notSupported(`${path}.httpGet.scheme`, h.httpGet.scheme, ["HTTP", "HTTPS"]));
  }
  if (isObject(h.tcpSocket)) causes.push(...portNumOrName(h.tcpSocket.port, `${path}.tcpSocket.port`));
  if (isObject(h.grpc)) {
    for (const m of isValidPortNum(h.grpc.port))
      causes.push(field.invalid(`${path}.grpc.port`, h.grpc.port, m));
  }
  return causes;
}

const PROBE_NUMBERS = [
  "initialDelaySeconds",
  "timeoutSeconds",
  "periodSeconds",
  "successThreshold",
  "failureThreshold",
];

export function validateProbe(probe: unknown, path: string, mustSucceedOnce: boolean): StatusCause[] {
  if (!isObject(probe)) return [];
  const causes = validateHandler(probe, path, ["exec", "httpGet", "tcpSocket", "grpc"]);
  for (const k of PROBE_NUMBERS)
    if (typeof probe[k] === "number" && probe[k] < 0)
      causes.push(field.invalid(`${path}.${k}`, probe[k], "must be greater than or equal to 0"));
  if (mustSucceedOnce && typeof probe.successThreshold === "number" && probe.successThreshold !== 1)
    causes.push(field.invalid(`${path}.successThreshold`, probe.successThreshold, "must be 1"));
  return causes;
}

/** Probes and lifecycle hooks of one container. */
export function validateContainerHooks(c: Record<string, any>, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  causes.push(...validateProbe(c.livenessProbe, `${path}.livenessProbe`, true));
  causes.push(...validateProbe(c.readinessProbe, `${path}.readinessProbe`, false));
  causes.push(...validateProbe(c.startupProbe, `${path}.startupProbe`, true));
  if (isObject(c.lifecycle)) {
    for (const hook of ["postStart", "preStop"])
      if (isObject(c.lifecycle[hook]))
        causes.push(...validateHandler(c.lifecycle[hook], `${path}.lifecycle.${hook}`));
  }
  return causes;
}

/** Environment variable names: printable ASCII other than '=' (relaxed validation, on in 1.32). */
export function validateEnv(env: unknown, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  if (!Array.isArray(env)) return causes;
  env.forEach((e, i) => {
    const p = `${path}[${i}]`;
    if (!isObject(e) || !e.name) {
      causes.push(field.required(`${p}.name`));
      return;
    }
    if (!/^[\x20-\x3c\x3e-\x7e]+$/.test(e.name))
      causes.push(
        field.invalid(
          `${p}.name`,
          e.name,
          "a valid environment variable name must consist only of printable ASCII characters other than '='",
        ),
      );
    if (e.value && isObject(e.valueFrom))
      causes.push(field.invalid(`${p}.valueFrom`, "", "may not be specified when `value` is not empty"));
  });
  return causes;
}

const TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

export function validateTolerations(tolerations: unknown, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  if (!Array.isArray(tolerations)) return causes;
  tolerations.forEach((t, i) => {
    const p = `${path}[${i}]`;
    if (!isObject(t)) return;
    const key = t.key ?? "";
    const op = t.operator ?? "";
    if (key) for (const m of isQualifiedName(key)) causes.push(field.invalid(`${p}.key`, key, m));
    if (!key && op !== "Exists")
      causes.push(
        field.invalid(
          `${p}.operator`,
          op,
          'operator must be Exists when `key` is empty, which means "match all values and all keys"',
        ),
      );
    if (t.tolerationSeconds != null && t.effect !== "NoExecute")
      causes.push(
        field.invalid(
          `${p}.effect`,
          t.effect ?? "",
          "effect must be 'NoExecute' when `tolerationSeconds` is set",
        ),
      );
    if (op === "Equal" || op === "") {
      const errs = isValidLabelValue(t.value ?? "");
      if (errs.length) causes.push(field.invalid(`${p}.operator`, t.value ?? "", errs.join(";")));
    } else if (op === "Exists") {
      if (t.value)
        causes.push(field.invalid(`${p}.operator`, t, "value must be empty when `operator` is 'Exists'"));
    } else {
      causes.push(field.notSupported(`${p}.operator`, op, ["Equal", "Exists"]));
    }
    if (t.effect && !TAINT_EFFECTS.includes(t.effect))
      causes.push(field.notSupported(`${p}.effect`, t.effect, TAINT_EFFECTS));
  });
  return causes;
}
