// Server-side field validation (fieldValidation=Strict|Warn|Ignore): unknown fields are an
// error, a warning header, or ignored. The schema walk lives with the OpenAPI documents.
import { badRequest } from "../../api/errors";
import type { KubeObject } from "../../api/types";
import {
  knownFieldsCheck,
  pruneUnknownFields,
  strictDecodingMessage,
  unknownFieldMessages,
} from "../discovery/fields";
import type { WriteContext } from "./resource";

export type FieldValidation = "Strict" | "Warn" | "Ignore";

/** Strict: unknown fields are a 400. Warn and Ignore: they are dropped (Warn says so in a header). */
export function checkFields(w: WriteContext, obj: KubeObject): void {
  if (w.fieldValidation === "Strict") {
    const unknown = knownFieldsCheck(obj.apiVersion ?? "", obj.kind ?? "", obj);
    if (unknown.length) throw badRequest(strictDecodingMessage(unknown));
    return;
  }
  const dropped = pruneUnknownFields(obj.apiVersion ?? "", obj.kind ?? "", obj);
  if (dropped.length && w.fieldValidation === "Warn") w.warnings.push(...unknownFieldMessages(dropped));
}
