// The one generic handler behind every resource: get, list, watch, create, update, patch,
// delete, deletecollection, and the status subresource. Per-resource behaviour lives in
// strategies (api/strategies) and in the few special subresources (subresources.ts).
import type { Context } from "hono";
import {
  badRequest,
  field,
  invalid,
  methodNotAllowed,
  notFoundPath,
  StatusError,
  staleResourceVersion,
} from "../../api/errors";
import { lookupGVR } from "../../api/registry";
import type { ResourceDef } from "../../api/resource";
import { clusters } from "../../api/strategies/clusters";
import { TABLE_TYPE } from "../../api/table";
import type { KubeObject } from "../../api/types";
import { clusterNameOf } from "../../durable-objects/clusters";
import { Store } from "../../durable-objects/store/client";
import type { DeleteOptions, ListQuery, WatchQuery } from "../../durable-objects/store/protocol";
import { admissionRollback, admit } from "../admission";
import type { AppEnv } from "../app-env";
import { setAuditRequestObject } from "../audit/index";
import { objectLimit } from "../clusters/limits";
import { customDef } from "../custom-resources";
import { negotiate } from "../encoding/negotiate";
import {
  decodeBody,
  decodeObject,
  decodePatch,
  mediaType,
  PATCH_TYPES,
  readText,
} from "../encoding/request-body";
import { encoded, json, wantsYaml } from "../encoding/respond";
import { isTrue, type RequestInfo } from "../request-info";
import { traceOf } from "../trace/recorder";
import { statusTrace } from "../trace/status";
import { applyRepeats, checkFields, objectFound, patchFound } from "./field-validation";
import { applyPatchBody, recordManagedFields } from "./patching";
import {
  checkDecodedTypeMeta,
  checkName,
  checkNamespace,
  checkTypeMeta,
  generateName,
  isConflict,
  prepareCreate,
  prepareUpdate,
  validateObject,
} from "./prepare";
import { relayWatchId } from "./relay";
import { REST_STORAGES } from "./rest-storages";
import { subresourceHandler } from "./subresources";
import { type FieldValidation, respondWith, type WriteContext } from "./write-context";

/** The content type of a Table answer. */

type C = Context<AppEnv>;

/** Subresources whose body is the object itself: prepareUpdate says which part each may change. */
const OBJECT_SUBRESOURCES = new Set(["status", "ephemeralcontainers"]);

function intParam(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  if (v === null || v === "") return undefined;
  if (!/^-?\d+$/.test(v)) throw badRequest(`invalid value for ${name}: ${v}`);
  return Number(v);
}

/** The options kind a query parameter belongs to, for 422s in upstream's words. */
function optionsKind(verb: string): string {
  return (
    { create: "CreateOptions", update: "UpdateOptions", patch: "PatchOptions", delete: "DeleteOptions" }[
      verb
    ] ?? "ListOptions"
  );
}

function invalidOption(verb: string, cause: ReturnType<typeof field.notSupported>): StatusError {
  return invalid({ group: "meta.k8s.io", kind: optionsKind(verb) }, "", [cause]);
}

function dryRunOf(q: URLSearchParams, verb: string): boolean {
  const values = q.getAll("dryRun");
  const bad = values.filter((v) => v !== "All" && v !== "");
  if (bad.length) throw invalidOption(verb, field.notSupported("dryRun", bad, ["All"]));
  return values.includes("All");
}

function fieldValidationOf(q: URLSearchParams, verb: string): FieldValidation {
  const v = q.get("fieldValidation") ?? "Warn";
  if (v !== "Strict" && v !== "Warn" && v !== "Ignore")
    throw invalidOption(verb, field.notSupported("fieldValidation", v, ["Ignore", "Strict", "Warn"]));
  return v;
}

/** A write that admission allowed; if the store then refuses it, admission's reservations are undone. */
async function admitted<T>(
  w: WriteContext,
  op: "CREATE" | "UPDATE" | "DELETE",
  object: KubeObject | undefined,
  old: KubeObject | undefined,
  write: () => Promise<T>,
): Promise<T> {
  try {
    return await write();
  } catch (e) {
    await admissionRollback(w, op, object, old).catch(() => {});
    throw e;
  }
}

export async function handleResource(c: C): Promise<Response> {
  const info = c.get("info");
  const def =
    lookupGVR(info.apiGroup, info.apiVersion, info.resource) ??
    (await customDef(c.env, info.apiGroup, info.apiVersion, info.resource));
  if (!def || (info.namespace && !def.namespaced && !(def.resource === "namespaces" && info.name))) {
    throw notFoundPath();
  }
  // Cluster objects live in the root cluster only (docs/clusters.md)
  if (def === clusters && clusterNameOf(c.env)) throw notFoundPath();
  if (def.custom?.terminating && info.verb === "create") {
    const e = methodNotAllowed(info.verb, def);
    e.message = "create not allowed while custom resource definition is terminating";
    throw e;
  }
  const store = new Store(c.env, def);
  const q = c.get("url").searchParams;
  // writes to a collection that only exist on objects, and creates aimed at an object
  if (
    ((info.verb === "update" || info.verb === "patch") && !info.name) ||
    (info.verb === "create" && info.name && !info.subresource)
  )
    throw methodNotAllowed(info.verb, def);
  if (info.subresource) {
    const sub = def.subresources?.[info.subresource];
    if (!sub) throw notFoundPath();
    if (!sub.verbs.includes(info.verb)) throw methodNotAllowed(info.verb, def);
  } else if (
    !def.verbs.includes(info.verb) &&
    !(def.custom?.terminating && /^(update|patch)$/.test(info.verb))
  ) {
    // (a terminating custom resource no longer lists update and patch, but still takes them)
    throw methodNotAllowed(info.verb, def);
  }
  // for namespaces, /api/v1/namespaces/<name> names the object, not its namespace
  const namespace = def.namespaced ? info.namespace : "";
  const w: WriteContext = {
    c,
    info,
    def,
    store,
    dryRun: ["create", "update", "patch", "delete", "deletecollection"].includes(info.verb)
      ? dryRunOf(q, info.verb)
      : false,
    fieldValidation: ["create", "update", "patch"].includes(info.verb)
      ? fieldValidationOf(q, info.verb)
      : "Warn",
    warnings: [],
  };
  // status and ephemeralcontainers are the object itself, read and written by the generic paths
  if (
    info.subresource &&
    !OBJECT_SUBRESOURCES.has(info.subresource) &&
    !def.strategy.prepareForSubresourceUpdate?.[info.subresource]
  )
    return subresourceHandler(w, namespace);
  // a resource with a REST storage of its own (rest-storages.ts) serves the verbs it names
  const own = REST_STORAGES.get(def)?.[info.verb];
  if (own) return own(w, namespace);

  switch (info.verb) {
    case "get": {
      const out = negotiate(c.req.header("accept"), q.get("includeObject"));
      if (out.kind === "table") {
        const text = await store.listText({
          namespace: def.namespaced ? namespace : undefined,
          fieldSelector: `metadata.name=${info.name}`,
          table: { include: out.include },
        });
        const t = JSON.parse(text);
        if (t.rows.length === 0) await store.getText(namespace, info.name); // throws the 404
        // a table of one object carries the object's version, as upstream's does
        const rv = t.rows[0].object?.metadata?.resourceVersion;
        if (rv) t.metadata = { resourceVersion: rv };
        return json(t, 200, { "content-type": TABLE_TYPE });
      }
      return encoded(await store.getText(namespace, info.name), 200, c.req.header("accept") ?? null);
    }
    case "list": {
      const out = negotiate(c.req.header("accept"), q.get("includeObject"));
      const query: ListQuery = {
        namespace: def.namespaced && info.namespace ? info.namespace : undefined,
        labelSelector: q.get("labelSelector") ?? undefined,
        fieldSelector: q.get("fieldSelector") ?? undefined,
        limit: intParam(q, "limit"),
        continue: q.get("continue") ?? undefined,
        resourceVersion: q.get("resourceVersion") ?? undefined,
        resourceVersionMatch: q.get("resourceVersionMatch") ?? undefined,
        table: out.kind === "table" ? { include: out.include } : undefined,
      };
      const accept = c.req.header("accept") ?? null;
      if (out.kind === "table" || !wantsYaml(accept)) {
        const stream = await store.listStream(query);
        const type = out.kind === "table" ? TABLE_TYPE : "application/json";
        if (stream) return new Response(stream, { headers: { "content-type": type } });
      }
      const text = await store.listText(query);
      if (out.kind === "table") return json(text, 200, { "content-type": TABLE_TYPE });
      return encoded(text, 200, accept);
    }
    case "watch":
      return watch(c, def, store, info, q);
    case "create":
      return create(w);
    case "update":
      return update(w, namespace);
    case "patch":
      return patch(w, namespace);
    case "delete":
      return remove(w, namespace);
    case "deletecollection":
      return removeCollection(w, {
        namespace: def.namespaced && info.namespace ? info.namespace : undefined,
        labelSelector: q.get("labelSelector") ?? undefined,
        fieldSelector: q.get("fieldSelector") ?? undefined,
      });
  }
  throw methodNotAllowed(info.verb, def);
}

async function watch(
  c: C,
  def: ResourceDef,
  store: Store,
  info: RequestInfo,
  q: URLSearchParams,
): Promise<Response> {
  const out = negotiate(c.req.header("accept"), q.get("includeObject"));
  let fieldSelector = q.get("fieldSelector") ?? undefined;
  if (info.name) fieldSelector = [fieldSelector, `metadata.name=${info.name}`].filter(Boolean).join(",");
  const query: WatchQuery = {
    namespace: def.namespaced && info.namespace ? info.namespace : undefined,
    labelSelector: q.get("labelSelector") ?? undefined,
    fieldSelector,
    resourceVersion: q.get("resourceVersion") ?? undefined,
    allowWatchBookmarks: isTrue(q.get("allowWatchBookmarks")),
    sendInitialEvents: q.has("sendInitialEvents") ? isTrue(q.get("sendInitialEvents")) : undefined,
    timeoutSeconds: intParam(q, "timeoutSeconds"),
    table: out.kind === "table" ? { include: out.include } : undefined,
    relay: relayWatchId(c.env, c.req.raw),
  };
  if (c.req.header("upgrade")?.toLowerCase() === "websocket") {
    // watch over a WebSocket: one JSON event per message; tables are for chunked watches only
    const res = await store.watchSocket({ ...query, table: undefined });
    if (res.status !== 101) throw StatusError.fromStatus((await res.json()) as never);
    return res;
  }
  const res = await store.watch(query, c.req.raw.signal);
  if (!res.ok) {
    const status = await res.json();
    throw StatusError.fromStatus(status as never);
  }
  // the shard's own response, headers and stream, so the runtime pumps its bytes to the client
  return res;
}

async function create(w: WriteContext): Promise<Response> {
  const decoded = await decodeBody(w.c.req.raw, w.def.kind);
  const obj = checkDecodedTypeMeta(w.def, decoded.value);
  checkFields(w, obj, objectFound(decoded, obj, w.def.kind));
  prepareCreate(w.def, obj, w.info, (o) => recordManagedFields(w, undefined, o), w.c.get("user"));
  validateObject(w.def, obj);
  if (w.def.strategy.warningsOnCreate) w.warnings.push(...w.def.strategy.warningsOnCreate(obj));
  await admit(w, "CREATE", obj, undefined);
  return admitted(w, "CREATE", obj, undefined, async () => {
    for (let attempt = 0; ; attempt++) {
      try {
        const trace = w.dryRun ? undefined : traceOf(w.c.req.raw)?.forStore();
        const r = await w.store.create(obj, { dryRun: w.dryRun, limit: objectLimit(w.c.env, w.def) }, trace);
        return respondWith(w, r.body, r.code);
      } catch (e) {
        // a generated name that is taken is generated again (upstream retries up to 7 times)
        const generated =
          obj.metadata.generateName && obj.metadata.name?.startsWith(obj.metadata.generateName);
        if (!(e instanceof StatusError && e.reason === "AlreadyExists" && generated && attempt < 7)) throw e;
        obj.metadata.name = generateName(obj.metadata.generateName!);
      }
    }
  });
}

async function update(w: WriteContext, namespace: string): Promise<Response> {
  const decoded = await decodeBody(w.c.req.raw, w.def.kind);
  const obj = checkDecodedTypeMeta(w.def, decoded.value);
  checkName(obj, w.info.name, namespace);
  checkNamespace(w.def, obj, w.info);
  checkFields(w, obj, objectFound(decoded, obj, w.def.kind));
  // a resource over several shards: a vector a watch gave is read as the object's own shard's part
  if (obj.metadata.resourceVersion)
    obj.metadata.resourceVersion = w.store.ownVersion(obj.metadata.resourceVersion, namespace, w.info.name);
  const clientRV = obj.metadata.resourceVersion;
  const old = await w.store.get(namespace, w.info.name);
  if (clientRV && clientRV !== old.metadata.resourceVersion) {
    throw staleResourceVersion(w.def, w.info.name);
  }
  const next = prepareUpdate(w.def, obj, old, w.info.subresource, (o) => recordManagedFields(w, old, o));
  validateObject(w.def, next, old, w.info.subresource, (m) => w.warnings.push(m));
  await admit(w, "UPDATE", next, old);
  const text = await admitted(w, "UPDATE", next, old, () =>
    w.store.update(next, { expectRV: old.metadata.resourceVersion, dryRun: w.dryRun }, old),
  );
  return respondWith(w, text, 200);
}

async function patch(w: WriteContext, namespace: string): Promise<Response> {
  const type = mediaType(w.c.req.header("content-type") ?? null);
  // a custom resource has no Go type to merge strategically by (upstream's CR handler refuses it)
  const accepted = w.def.custom
    ? PATCH_TYPES.filter((t) => t !== "application/strategic-merge-patch+json")
    : PATCH_TYPES;
  if (!accepted.includes(type) || type === "application/apply-patch+cbor") {
    throw new StatusError(
      415,
      "UnsupportedMediaType",
      `the body of the request was in an unknown format - accepted media types include: ${accepted.slice(0, w.def.custom ? 3 : 4).join(", ")}`,
    );
  }
  const text = await readText(w.c.req.raw);
  const decoded = decodePatch(text, type, [type], w.fieldValidation);
  const body = decoded.value;
  setAuditRequestObject(w.c, body);
  const apply = type === "application/apply-patch+yaml";
  if (apply) applyRepeats(w, decoded);
  const found = apply ? {} : patchFound(decoded, type);
  const q = w.c.get("url").searchParams;
  const force = isTrue(q.get("force"));
  if (type !== "application/apply-patch+yaml" && q.has("force"))
    throw invalid({ group: "meta.k8s.io", kind: "PatchOptions" }, "", [
      field.forbidden("force", "may not be specified for non-apply patch"),
    ]);
  // a patch that names a resourceVersion is a precondition, as an update's is: not retried
  let pinned = false;
  for (let attempt = 0; ; attempt++) {
    const old = await w.store.find(namespace, w.info.name);
    try {
      if (!old) {
        if (type !== "application/apply-patch+yaml") await w.store.get(namespace, w.info.name); // 404
        return await createByApply(w, body, force);
      }
      const next = applyPatchBody(w, old, body, type, force);
      // the patched object is still the one the URL names (upstream: namespace, then name)
      checkNamespace(w.def, next, w.info);
      checkName(next, w.info.name, namespace);
      const wanted =
        next.metadata.resourceVersion &&
        w.store.ownVersion(next.metadata.resourceVersion, namespace, w.info.name);
      if (wanted) next.metadata.resourceVersion = wanted;
      if (wanted && wanted !== old.metadata.resourceVersion) {
        pinned = true;
        throw staleResourceVersion(w.def, w.info.name);
      }
      // an apply's managed fields are the applied configuration's (applyPatchBody)
      const track = apply ? undefined : (o: KubeObject) => recordManagedFields(w, old, o);
      const prepared = prepareUpdate(w.def, next, old, w.info.subresource, track);
      checkFields(w, prepared, found);
      validateObject(w.def, prepared, old, w.info.subresource, (m) => w.warnings.push(m));
      await admit(w, "UPDATE", prepared, old);
      const out = await admitted(w, "UPDATE", prepared, old, () =>
        w.store.update(
          prepared,
          { expectRV: old.metadata.resourceVersion, dryRun: w.dryRun },
          old,
          statusTrace(w, old),
        ),
      );
      return respondWith(w, out, 200);
    } catch (e) {
      if (isConflict(e) && !pinned && attempt < 8) continue;
      throw e;
    }
  }
}

async function createByApply(w: WriteContext, body: unknown, force: boolean): Promise<Response> {
  const obj = checkTypeMeta(w.def, body);
  const applied = applyPatchBody(w, undefined, obj, "application/apply-patch+yaml", force);
  checkNamespace(w.def, applied, w.info);
  checkName(applied, w.info.name, w.def.namespaced ? w.info.namespace : undefined);
  checkFields(w, applied);
  prepareCreate(w.def, applied, w.info, undefined, w.c.get("user"));
  validateObject(w.def, applied);
  await admit(w, "CREATE", applied, undefined);
  const r = await admitted(w, "CREATE", applied, undefined, () =>
    w.store.create(applied, { dryRun: w.dryRun, limit: objectLimit(w.c.env, w.def) }),
  );
  return respondWith(w, r.body, 201);
}

/** An empty DELETE body means default options. */
function emptyIsNothing(e: unknown): undefined {
  if (e instanceof StatusError && e.message === "the body of the request was empty") return undefined;
  throw e;
}

async function deleteOptions(w: WriteContext): Promise<DeleteOptions> {
  const q = w.c.get("url").searchParams;
  let body: Record<string, any> = {};
  const hasBody = w.c.req.header("content-length") !== "0" && w.c.req.raw.body !== null;
  const parsed = hasBody ? await decodeObject(w.c.req.raw).catch(emptyIsNothing) : undefined;
  if (parsed !== undefined) {
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
      throw badRequest("DeleteOptions must be an object");
    body = parsed as Record<string, any>;
  }
  const explicitPolicy = q.get("propagationPolicy") ?? body.propagationPolicy ?? undefined;
  const orphanDependents = q.get("orphanDependents") ?? body.orphanDependents ?? undefined;
  if (explicitPolicy !== undefined && orphanDependents !== undefined)
    throw invalid({ group: "meta.k8s.io", kind: "DeleteOptions" }, "", [
      field.invalid(
        "propagationPolicy",
        explicitPolicy,
        "orphanDependents and deletionPropagation cannot be both set",
      ),
    ]);
  const orphan = orphanDependents === true || orphanDependents === "true";
  let policy =
    explicitPolicy ?? (orphanDependents !== undefined ? (orphan ? "Orphan" : "Background") : undefined);
  const byDefault = w.def.strategy.orphanByDefault;
  if (policy === undefined && byDefault) {
    policy = "Orphan";
    w.warnings.push(byDefault);
  }
  if (policy !== undefined && !["Orphan", "Background", "Foreground"].includes(policy))
    throw invalid({ group: "meta.k8s.io", kind: "DeleteOptions" }, "", [
      field.notSupported("propagationPolicy", policy, ["Foreground", "Background", "Orphan"]),
    ]);
  const grace = intParam(q, "gracePeriodSeconds") ?? body.gracePeriodSeconds;
  if (grace !== undefined && (typeof grace !== "number" || grace < 0))
    throw badRequest(`invalid gracePeriodSeconds: ${grace}`);
  return {
    gracePeriodSeconds: grace,
    propagationPolicy: policy,
    preconditions: body.preconditions,
    dryRun: w.dryRun || (Array.isArray(body.dryRun) && body.dryRun.includes("All")),
  };
}

/**
 * deletecollection: each object the query selects is admitted as its own DELETE, as upstream's
 * DeleteCollection admits each item; one refusal refuses the request before anything is
 * deleted (and gives back what admission reserved for the others), and the store deletes only
 * the objects admitted, by uid.
 */
async function removeCollection(w: WriteContext, query: ListQuery): Promise<Response> {
  const opts = await deleteOptions(w);
  const items = (JSON.parse(await w.store.listText(query)).items ?? []) as KubeObject[];
  const admittedItems: KubeObject[] = [];
  const admitted: Record<string, string> = {};
  try {
    for (const item of items) {
      await admit(w, "DELETE", undefined, item);
      admittedItems.push(item);
      admitted[`${item.metadata.namespace ?? ""}/${item.metadata.name}`] = item.metadata.uid ?? "";
    }
  } catch (e) {
    for (const item of admittedItems) await admissionRollback(w, "DELETE", undefined, item).catch(() => {});
    throw e;
  }
  let text: string;
  try {
    text = await w.store.removeCollection(query, { ...opts, admitted });
  } catch (e) {
    for (const item of admittedItems) await admissionRollback(w, "DELETE", undefined, item).catch(() => {});
    throw e;
  }
  if (admittedItems.length) {
    // what admission reserved for an object the store then left out is given back
    const gone = new Set(
      ((JSON.parse(text).items ?? []) as KubeObject[]).map((o) => o.metadata?.uid).filter(Boolean),
    );
    for (const item of admittedItems)
      if (!gone.has(item.metadata.uid)) await admissionRollback(w, "DELETE", undefined, item).catch(() => {});
  }
  return encoded(text, 200, w.c.req.header("accept") ?? null);
}

/** The generic delete of one object (exported for REST storages that do more around it). */
export async function remove(w: WriteContext, namespace: string): Promise<Response> {
  const opts = await deleteOptions(w);
  const old = await w.store.get(namespace, w.info.name);
  await admit(w, "DELETE", undefined, old);
  const r = await admitted(w, "DELETE", undefined, old, () => w.store.remove(namespace, w.info.name, opts));
  return respondWith(w, r.body, r.code);
}
