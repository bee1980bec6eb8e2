// The generic write pipeline's steps, the same for every resource: type checks, server-owned
// metadata, the strategy's defaults, spec/status separation, generation, validation.
import { badRequest, field, invalid, type StatusCause, StatusError } from "../../api/errors";
import { clone } from "../../api/patch/util";
import { apiVersionOf, type ResourceDef } from "../../api/resource";
import { countKeys, isObject } from "../../api/strategies/common";
import type { KubeObject } from "../../api/types";
import type { UserInfo } from "../../api/user";
import { schemaCauses } from "../../api/validation/schema";
import { decodeTypeError } from "../discovery/decode-types";
import type { RequestInfo } from "../request-info";
import { decodingFailed } from "./field-validation";

/** The body must be an object of the endpoint's kind; apiVersion and kind may be omitted. */
export function checkTypeMeta(
  def: ResourceDef,
  body: unknown,
  kind = def.kind,
  apiVersion = apiVersionOf(def),
): KubeObject {
  return typeMeta(def, body, kind, apiVersion, false);
}

/**
 * checkTypeMeta for a create or update body, which upstream decodes into its type: a
 * metadata that is not an object fails that decoding (400, in encoding/json's words).
 */
export function checkDecodedTypeMeta(
  def: ResourceDef,
  body: unknown,
  kind = def.kind,
  apiVersion = apiVersionOf(def),
): KubeObject {
  return typeMeta(def, body, kind, apiVersion, true);
}

function typeMeta(
  def: ResourceDef,
  body: unknown,
  kind: string,
  apiVersion: string,
  decoded: boolean,
): KubeObject {
  if (!isObject(body)) throw badRequest("the body of the request must be a JSON or YAML object");
  if (body.apiVersion !== undefined && body.apiVersion !== apiVersion) {
    throw badRequest(
      `the API version in the data (${String(body.apiVersion)}) does not match the expected API version (${apiVersion})`,
    );
  }
  if (body.kind !== undefined && body.kind !== kind) {
    throw badRequest(
      `the kind in the data (${String(body.kind)}) does not match the expected kind (${kind})`,
    );
  }
  if (body.metadata !== undefined && body.metadata !== null && !isObject(body.metadata)) {
    const wrong = decoded && decodeTypeError(apiVersion, kind, { metadata: body.metadata });
    if (wrong) throw badRequest(`${decodingFailed(kind, apiVersion)}${wrong}`);
    throw invalid({ group: def.group, kind }, "", [
      field.invalid("metadata", body.metadata, "must be an object"),
    ]);
  }
  // apiVersion and kind first, as upstream serializes objects
  const { apiVersion: _a, kind: _k, metadata, ...rest } = body;
  return { apiVersion, kind, metadata: metadata ?? {}, ...rest } as KubeObject;
}

/** Namespace from the URL wins; a different one in the body is an error, as upstream. */
export function checkNamespace(def: ResourceDef, obj: KubeObject, info: RequestInfo): void {
  const meta = obj.metadata;
  if (!def.namespaced) {
    delete meta.namespace;
    return;
  }
  if (meta.namespace && info.namespace && meta.namespace !== info.namespace) {
    throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
  }
  meta.namespace = info.namespace || meta.namespace;
  if (!meta.namespace)
    throw badRequest("the server could not find the requested resource (namespace is required)");
}

/**
 * A subresource's object (an Eviction, a Binding) takes the request's namespace when it names
 * none, and may name no other (upstream's EnsureObjectNamespaceMatchesRequestNamespace).
 */
export function requestNamespace(obj: KubeObject, namespace: string): void {
  const own = obj.metadata.namespace;
  if (!own) {
    if (namespace) obj.metadata.namespace = namespace;
  } else if (namespace && own !== namespace)
    throw badRequest("the namespace of the provided object does not match the namespace sent on the request");
}

/**
 * A PUT's body, or a patch's result, is the object its URL names (upstream's checkName): it
 * has a name, the URL's, and a namespace, when it has one, the request's. Each a 400.
 */
export function checkName(obj: KubeObject, name: string, namespace: string | undefined): void {
  const meta = obj.metadata;
  if (!meta.name)
    throw badRequest(
      `the name of the object (${name} based on URL) was undeterminable: name must be provided`,
    );
  if (meta.name !== name)
    throw badRequest(`the name of the object (${meta.name}) does not match the name on the URL (${name})`);
  if (namespace && meta.namespace && meta.namespace !== namespace)
    throw badRequest(
      `the namespace of the object (${meta.namespace}) does not match the namespace on the request (${namespace})`,
    );
}

const SERVER_OWNED = [
  "uid",
  "resourceVersion",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "generation",
  "selfLink",
];

/** upstream's name generator: 5 characters from an alphabet without vowels or look-alikes */
export function generateName(prefix: string): string {
  const alphabet = "bcdfghjklmnpqrstvwxz2456789";
  const bytes = crypto.getRandomValues(new Uint8Array(5));
  return prefix.slice(0, 58) + [...bytes].map((b) => alphabet[b % alphabet.length]).join("");
}

/**
 * Empty lists and maps of ObjectMeta are not stored: upstream's types mark them omitempty, so
 * a patch that takes the last finalizer (or label) off leaves no empty field behind.
 */
function dropEmptyMeta(meta: KubeObject["metadata"]): void {
  for (const k of ["finalizers", "ownerReferences"] as const)
    if (Array.isArray(meta[k]) && meta[k].length === 0) delete meta[k];
  for (const k of ["labels", "annotations"] as const)
    if (isObject(meta[k]) && countKeys(meta[k]) === 0) delete meta[k];
}

/**
 * Called with the object as the client sent it plus the defaults, before the strategy adds
 * what the server generates: upstream records a write's managed fields at that point (after
 * decoding, which defaults; before admission and PrepareForCreate/PrepareForUpdate), so a Job's
 * generated selector or a Service's allocated IPs belong to no client's manager.
 */
export type TrackFields = (obj: KubeObject) => void;

/** `user` is the requester, handed to the strategy's prepareForCreate. */
export function prepareCreate(
  def: ResourceDef,
  obj: KubeObject,
  info: RequestInfo,
  track?: TrackFields,
  user?: UserInfo,
): void {
  checkNamespace(def, obj, info);
  // the name is generated before validation, as upstream's BeforeCreate does
  if (!obj.metadata.name && typeof obj.metadata.generateName === "string" && obj.metadata.generateName)
    obj.metadata.name = generateName(obj.metadata.generateName);
  for (const k of SERVER_OWNED) delete obj.metadata[k];
  dropEmptyMeta(obj.metadata);
  def.strategy.defaults?.(obj);
  track?.(obj);
  def.strategy.prepareForCreate?.(obj, user);
  if (def.subresources?.status && !def.strategy.prepareForCreate && "status" in obj) {
    // status is written through the status subresource, never on create (upstream resets it)
    delete obj.status;
  }
}

/**
 * Merges an update into the current object: server-owned metadata comes from the old
 * object; the main resource cannot change status and the status subresource cannot
 * change anything else; a spec change bumps generation. `track` sees the object defaulted
 * and not yet prepared (see TrackFields).
 */
export function prepareUpdate(
  def: ResourceDef,
  obj: KubeObject,
  old: KubeObject,
  subresource: string,
  track?: TrackFields,
): KubeObject {
  let next: KubeObject;
  let prepare: (() => void) | undefined;
  let main = false;
  if (subresource === "ephemeralcontainers") {
    // only the ephemeral containers change (upstream's dropNonEphemeralContainerUpdates)
    next = clone(old);
    next.spec = { ...next.spec, ephemeralContainers: obj.spec?.ephemeralContainers };
    if (next.spec.ephemeralContainers === undefined) delete next.spec.ephemeralContainers;
    if (obj.metadata.managedFields !== undefined) next.metadata.managedFields = obj.metadata.managedFields;
  } else if (subresource === "status" || def.strategy.prepareForSubresourceUpdate?.[subresource]) {
    next = clone(old); // JSON from the store: a plain deep copy, without the runtime's serializer
    next.status = obj.status;
    // labels and annotations may be written alongside status, as upstream allows
    if (obj.metadata.labels !== undefined) next.metadata.labels = obj.metadata.labels;
    if (obj.metadata.annotations !== undefined) next.metadata.annotations = obj.metadata.annotations;
    if (obj.metadata.managedFields !== undefined) next.metadata.managedFields = obj.metadata.managedFields;
    const forStatus =
      subresource === "status"
        ? def.strategy.prepareForStatusUpdate
        : def.strategy.prepareForSubresourceUpdate?.[subresource];
    if (forStatus) prepare = () => forStatus(next, old);
  } else {
    next = obj;
    main = true;
    const forUpdate = def.strategy.prepareForUpdate;
    if (forUpdate) prepare = () => forUpdate(next, old);
  }
  const m = next.metadata;
  m.uid = old.metadata.uid;
  m.creationTimestamp = old.metadata.creationTimestamp;
  m.deletionTimestamp = old.metadata.deletionTimestamp;
  m.deletionGracePeriodSeconds = old.metadata.deletionGracePeriodSeconds;
  if (m.deletionTimestamp === undefined) delete m.deletionTimestamp;
  if (m.deletionGracePeriodSeconds === undefined) delete m.deletionGracePeriodSeconds;
  m.generation = old.metadata.generation;
  if (m.generation === undefined) delete m.generation;
  dropEmptyMeta(m);
  if (track) {
    // upstream's order: defaults, managed fields, then the strategy's preparation
    def.strategy.defaults?.(next);
    track(next);
  }
  if (prepare) {
    prepare();
    dropEmptyMeta(m);
  }
  if (main && def.subresources?.status) {
    if (old.status === undefined) delete next.status;
    else next.status = old.status;
  }
  // (again after preparing: a strategy may clear what defaults would fill)
  if (!track || prepare) def.strategy.defaults?.(next);
  const counted = def.strategy.generationOf ?? ((o: KubeObject) => o.spec);
  if (
    def.strategy.generation &&
    subresource !== "status" &&
    JSON.stringify(counted(next)) !== JSON.stringify(counted(old))
  ) {
    m.generation = (old.metadata.generation ?? 0) + 1;
  }
  return next;
}

/** Schema causes the strategy's own cause for the same field replaces (an enum, a required field). */
const SAID_ONCE = new Set(["FieldValueNotSupported", "FieldValueRequired"]);

/** 422 with one cause per bad field (schema first, then the strategy's rules), or nothing. */
export function validateObject(
  def: ResourceDef,
  obj: KubeObject,
  old?: KubeObject,
  subresource?: string,
  warn?: (message: string) => void,
): void {
  const meta = obj.metadata;
  const schema: StatusCause[] = schemaCauses(obj.apiVersion ?? "", obj.kind ?? def.kind, obj);
  const own: StatusCause[] = [];
  const ownRules = subresource && old ? def.strategy.validateSubresource?.[subresource] : undefined;
  if (ownRules) own.push(...ownRules(obj, old!));
  else if (def.strategy.validate) own.push(...def.strategy.validate(obj, old, warn));
  // a value outside an enum, or a missing one, is said once: in the strategy's words when it
  // has its own for that field or the object or list holding it (spec.updateStrategy for its
  // type, spec.accessModes for one of its items), or for the parts of a missing object (an
  // HPA's spec.scaleTargetRef.kind and .name, not spec.scaleTargetRef)
  const ownFields = own.map((c) => c.field ?? "");
  const said = (f = "") =>
    ownFields.some((g) => f === g || f.startsWith(`${g}.`) || f.startsWith(`${g}[`) || g.startsWith(`${f}.`));
  const causes = schema.filter((c) => !(SAID_ONCE.has(c.type ?? "") && said(c.field)));
  causes.push(...own);
  if (!ownRules && !def.strategy.validate && !meta.name && !meta.generateName && !old)
    causes.push(field.required("metadata.name", "name or generateName is required"));
  if (old && meta.name !== old.metadata.name)
    causes.push(field.invalid("metadata.name", meta.name, "field is immutable"));
  const seen = new Set<string>();
  const unique = causes.filter((c) => {
    const key = `${c.type}|${c.field}|${c.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  if (unique.length)
    throw invalid(
      { group: def.group, kind: obj.kind ?? def.kind },
      meta.name ?? meta.generateName ?? "",
      unique,
    );
}

/** Thrown when a read-modify-write lost a race and may be retried. */
export function isConflict(e: unknown): boolean {
  return e instanceof StatusError && e.code === 409 && e.reason === "Conflict";
}
