// Content negotiation for responses: plain JSON, YAML, or a meta.k8s.io Table for kubectl get.
import { notAcceptable } from "../../api/errors";
import type { IncludeObject } from "../../api/table";

export type Output = { kind: "json" } | { kind: "yaml" } | { kind: "table"; include: IncludeObject };

function params(entry: string): { type: string; p: Record<string, string> } {
  const [type, ...rest] = entry.split(";").map((s) => s.trim());
  const p: Record<string, string> = {};
  for (const kv of rest) {
    const i = kv.indexOf("=");
    if (i > 0) p[kv.slice(0, i).trim()] = kv.slice(i + 1).trim();
  }
  return { type: type.toLowerCase(), p };
}

export function negotiate(accept: string | null | undefined, includeObject: string | null): Output {
  if (!accept) return { kind: "json" };
  for (const entry of accept.split(",")) {
    const { type, p } = params(entry);
    if (p.as) {
      if (
        p.as === "Table" &&
        p.g === "meta.k8s.io" &&
        (p.v === "v1" || p.v === "v1beta1") &&
        type === "application/json"
      ) {
        const include = (includeObject ?? "Metadata") as IncludeObject;
        return {
          kind: "table",
          include: ["None", "Metadata", "Object"].includes(include) ? include : "Metadata",
        };
      }
      continue; // other transformations (PartialObjectMetadata) are not offered
    }
    if (type === "application/json" || type === "*/*" || type === "application/*") return { kind: "json" };
    if (type === "application/yaml") return { kind: "yaml" };
  }
  throw notAcceptable(
    "only the following media types are accepted: application/json, application/yaml, application/json;as=Table;v=v1;g=meta.k8s.io",
  );
}
