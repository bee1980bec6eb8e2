// Server-side field validation (fieldValidation=Strict|Warn|Ignore): unknown fields are an
// error, a warning header, or ignored. The schema walk lives with the OpenAPI documents.
import { badRequest } from "../../api/errors";
import type { KubeObject } from "../../api/types";
import { knownFieldsCheck, strictDecodingMessage, unknownFieldMessages } from "../discovery/fields";
import type { WriteContext } from "./resource";

export type FieldValidation = "Strict" | "Warn" | "Ignore";

export function checkFields(w: WriteContext, obj: KubeObject): void {
  if (w.fieldValidation === "Ignore") return;
  const unknown = knownFieldsCheck(obj.apiVersion ?? "", obj.kind ?? "", obj);
  if (unknown.length === 0) return;
  if (w.fieldValidation === "Strict") throw badRequest(strictDecodingMessage(unknown));
  w.warnings.push(...unknownFieldMessages(unknown));
}
