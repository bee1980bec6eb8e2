// What the apiserver's refusals mean to a controller: not found, already exists, conflict,
// a terminating namespace, an object gone meanwhile.
import { StatusError } from "../../../api/errors";

export function isNotFound(e: unknown): boolean {
  return e instanceof StatusError && e.code === 404;
}

export function isAlreadyExists(e: unknown): boolean {
  return e instanceof StatusError && e.reason === "AlreadyExists";
}

export function isConflict(e: unknown): boolean {
  return e instanceof StatusError && e.code === 409 && e.reason === "Conflict";
}

/** A create refused because its namespace is being deleted (nothing to do: it goes anyway). */
export function isNamespaceTerminating(e: unknown): boolean {
  return e instanceof StatusError && !!e.details?.causes?.some((c) => c.type === "NamespaceTerminating");
}

/** A NotFound about this very object (it was deleted while a sync was writing to it). */
export function isGone(e: unknown, resource: string, name: string): boolean {
  return (
    e instanceof StatusError && e.code === 404 && e.details?.kind === resource && e.details?.name === name
  );
}

export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
