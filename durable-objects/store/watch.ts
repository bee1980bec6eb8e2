// Watches on a shard: the request, then initial state or replay from a resourceVersion and
// live changes, all before the method yields, so nothing committed in between is missed or
// doubled.
import { badRequest, type Status, StatusError } from "../../api/errors";
import { hashText } from "../../api/hash";
import { resourceKey } from "../../api/registry";
import type { ResourceDef } from "../../api/resource";
import { checkFieldSelector, parseFieldSelector, parseLabelSelector } from "../../api/selectors";
import { statusJSON } from "../../api/status-json";
import { TABLE_TYPE } from "../../api/table";
import { fail } from "./encoding";
import { supportedFields } from "./fields";
import type { WatchQuery } from "./protocol";
import { RELAY_NO_HEADER, RELAY_OFFER_HEADER, RELAYED_HEADER } from "./relay";
import type { StoreShard } from "./shard";
import { shardKey } from "./shard-plan";
import { type Change, type Sink, socketSink, type Watcher, type WatchFilter } from "./watchers";

/**
 * A shard's watch request. Watches arrive as HTTP: the body (or, for a WebSocket upgrade, the
 * x-watch header) is a JSON {res, query}; the answer is the event stream, or the 101 of a
 * hibernatable socket, or the Status of a watch refused. A request to /relay opens the front
 * door's relay (relay.ts); its answer is the relay's stream.
 */
export async function serveWatch(
  shard: StoreShard,
  request: Request,
  use: (res: string) => ResourceDef,
): Promise<Response> {
  try {
    if (new URL(request.url).pathname === "/relay") {
      const relay = shard.relays.open(request.headers.get(RELAY_NO_HEADER) ?? "");
      return new Response(relay.readable, {
        headers: { "content-type": "application/octet-stream", "content-encoding": "identity" },
      });
    }
    if (request.headers.get("upgrade")?.toLowerCase() === "websocket") {
      const { res, query } = JSON.parse(request.headers.get("x-watch") ?? "{}") as {
        res: string;
        query: WatchQuery;
      };
      const [client, server] = Object.values(new WebSocketPair());
      shard.flush();
      return openWatch(shard, use(res), query, { server, client });
    }
    const { res, query } = (await request.json()) as { res: string; query: WatchQuery };
    shard.flush();
    return openWatch(shard, use(res), query);
  } catch (e) {
    const r = fail(e) as { ok: false; status: Status };
    return new Response(statusJSON(r.status), {
      status: r.status.code,
      headers: { "content-type": "application/json" },
    });
  }
}

/**
 * A view key longer than this is kept in the shard's storage, the socket's attachment naming
 * it: workerd caps an attachment at 16 KiB, and a custom resource's view carries its CRD's
 * defaults (api/custom/read-defaults.ts).
 */
const INLINE_VIEW_MAX = 1024;
const VIEW_PREFIX = "watch-view:";
/** long views by their storage key, per shard, as written or read back */
const viewsOf = new WeakMap<DurableObjectStorage, Map<string, string>>();
function viewCache(storage: DurableObjectStorage): Map<string, string> {
  let m = viewsOf.get(storage);
  if (!m) viewsOf.set(storage, (m = new Map()));
  return m;
}

type Attached = WatchFilter & { viewRef?: string };

function viewRef(view: string): string {
  return `${VIEW_PREFIX}${hashText(view)}.${view.length}`;
}

/** A watch socket's filter as its attachment carries it: a long view by reference. */
export function attachedFilter(storage: DurableObjectStorage, filter: WatchFilter): Attached {
  const view = filter.view;
  if (!view || view.length <= INLINE_VIEW_MAX) return filter;
  const ref = viewRef(view);
  const views = viewCache(storage);
  if (views.get(ref) !== view) {
    storage.kv.put(ref, view);
    views.set(ref, view);
  }
  return { ...filter, view: undefined, viewRef: ref };
}

function attachedView(storage: DurableObjectStorage, ref: string): string | undefined {
  const views = viewCache(storage);
  let view = views.get(ref);
  if (view === undefined) {
    view = storage.kv.get<string>(ref);
    if (view !== undefined) views.set(ref, view);
  }
  return view;
}

/** The shard's hibernatable watch sockets, each with the filter it was opened with. */
export function* watchSockets(ctx: DurableObjectState): Iterable<{ filter: WatchFilter; sink: Sink }> {
  for (const ws of ctx.getWebSockets()) {
    const att = ws.deserializeAttachment() as { filter?: Attached } | null;
    let filter = att?.filter;
    if (!filter) continue;
    if (filter.viewRef) {
      const { viewRef: ref, ...rest } = filter;
      filter = { ...rest, view: attachedView(ctx.storage, ref) };
      if (filter.view === undefined) continue; // its view is gone: it gets nothing
    }
    yield { filter, sink: socketSink(ws) };
  }
}

/** Opens a watch as a chunked HTTP stream, or over `socket` (a hibernatable WebSocket) when given. */
export function openWatch(
  shard: StoreShard,
  def: ResourceDef,
  q: WatchQuery,
  socket?: { server: WebSocket; client: WebSocket },
): Response {
  const labels = parseLabelSelector(q.labelSelector);
  const fields = parseFieldSelector(q.fieldSelector);
  checkFieldSelector(fields, supportedFields(def));
  const rvText = q.resourceVersion ?? "";
  if (rvText !== "" && !/^\d+$/.test(rvText)) throw badRequest(`invalid resource version: ${rvText}`);
  if (q.sendInitialEvents && !q.allowWatchBookmarks)
    throw badRequest(
      "allowWatchBookmarks: Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true",
    );

  const filter = { namespace: q.namespace, labels, fields, view: q.view };
  let readable: ReadableStream<Uint8Array> | undefined;
  let watcher: Watcher;
  const relay = !socket && q.relay !== undefined ? shard.relays.current : undefined;
  if (socket) {
    shard.acceptWatchSocket(socket.server, filter);
    watcher = shard.hub.transient(filter, socketSink(socket.server));
  } else {
    ({ readable, watcher } = shard.hub.open(filter, {
      table: q.table,
      bookmarks: !!q.allowWatchBookmarks,
      timeoutSeconds: q.timeoutSeconds,
      relayed: relay && { relay, id: q.relay! },
    }));
  }

  const fromState = rvText === "" || rvText === "0" || q.sendInitialEvents;
  if (fromState) {
    // Synthetic ADDED for what exists now, then live changes from the head.
    const nsCond = q.namespace !== undefined ? "WHERE namespace = ?" : "";
    const args = q.namespace !== undefined ? [q.namespace] : [];
    const cursor = shard.sql.exec<{
      rv: number;
      labels: string;
      fields: string;
      data: string;
      namespace: string;
      name: string;
    }>(
      `SELECT namespace, name, rv, labels, fields, data FROM objects ${nsCond} ORDER BY namespace, name`,
      ...args,
    );
    for (const r of cursor) {
      const c: Change = {
        rv: r.rv,
        type: "ADDED",
        namespace: r.namespace,
        name: r.name,
        labels: JSON.parse(r.labels),
        fields: JSON.parse(r.fields),
        prevLabels: null,
        prevFields: null,
        data: r.data,
      };
      shard.hub.replayTo(watcher, c);
    }
    if (q.sendInitialEvents)
      shard.hub.bookmark(watcher, shard.revision, { "k8s.io/initial-events-end": "true" });
  } else {
    const from = Number(rvText);
    if (from < shard.compacted) {
      const status = new StatusError(
        410,
        "Expired",
        `too old resource version: ${from} (${shard.compacted})`,
      ).toStatus();
      shard.hub.error(watcher, status);
    } else {
      const nsCond = q.namespace !== undefined ? "AND namespace = ?" : "";
      const args = q.namespace !== undefined ? [q.namespace] : [];
      const cursor = shard.sql.exec<{
        rv: number;
        type: Change["type"];
        namespace: string;
        name: string;
        labels: string;
        fields: string;
        prev_labels: string | null;
        prev_fields: string | null;
        data: string;
      }>(
        `SELECT rv, type, namespace, name, labels, fields, prev_labels, prev_fields, data FROM changes WHERE rv > ? ${nsCond} ORDER BY rv`,
        from,
        ...args,
      );
      for (const r of cursor) {
        shard.hub.replayTo(watcher, {
          rv: r.rv,
          type: r.type,
          namespace: r.namespace,
          name: r.name,
          labels: JSON.parse(r.labels),
          fields: JSON.parse(r.fields),
          prevLabels: r.prev_labels === null ? null : JSON.parse(r.prev_labels),
          prevFields: r.prev_fields === null ? null : JSON.parse(r.prev_fields),
          data: r.data,
        });
      }
    }
  }
  if (socket) return new Response(null, { status: 101, webSocket: socket.client });
  const contentType = q.table ? TABLE_TYPE : "application/json";
  // the apiserver hands this response to the client as it is: these are the client's headers
  const headers: Record<string, string> = {
    "content-type": contentType,
    "cache-control": "no-cache, private",
    // a compressed stream would sit in the compressor's buffer: events must go out as committed
    "content-encoding": "identity",
  };
  // a relayed watch's events are on the relay already: the front door writes them after this head
  if (relay) return new Response(null, { headers: { ...headers, [RELAYED_HEADER]: relay.no } });
  headers["transfer-encoding"] = "chunked";
  if (q.relay !== undefined)
    headers[RELAY_OFFER_HEADER] = shardKey(def.custom?.storeKey ?? resourceKey(def), shard.shardNo);
  return new Response(readable, { headers });
}
