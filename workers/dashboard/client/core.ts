// The client's core, shipped as browser JavaScript (no build step: it runs as written, so it
// avoids template literals). The token lives in sessionStorage; every API call carries it;
// a 401 anywhere signs the user out with the server's message.
export const CORE = String.raw`
var TOKEN_KEY = "edgeplane.dashboard.token";
var NS_KEY = "edgeplane.dashboard.namespace";
// the server-side Table kubectl get asks for: its columns and each row's metadata only
var TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io";
// the API's base: whatever precedes /dashboard/ (a cluster's /clusters/<name> prefix)
var BASE = location.pathname.slice(0, Math.max(0, location.pathname.indexOf("/dashboard/")));

function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }

/** The token in what the user pasted: a bare token, or a kubeconfig's "token:" line. */
function tokenFrom(text) {
  var t = String(text || "").trim();
  var m = /(?:^|\n)\s*(?:-\s*)?token:\s*["']?([^\s"']+)/.exec(t);
  if (m) return m[1];
  if (/^bearer\s+/i.test(t)) t = t.replace(/^bearer\s+/i, "");
  return /\s/.test(t) ? "" : t;
}

function ApiError(status, reason, message) {
  this.status = status; this.reason = reason; this.message = message;
}
ApiError.prototype = Object.create(Error.prototype);

async function failure(res) {
  var text = "";
  try { text = await res.text(); } catch (e) { /* the body is gone: the status says enough */ }
  var reason = res.statusText, message = text;
  try { var s = JSON.parse(text); reason = s.reason || reason; message = s.message || message; } catch (e) { /* not a Status */ }
  return new ApiError(res.status, reason, message || ("HTTP " + res.status));
}

function headers(extra) {
  var h = { authorization: "Bearer " + token(), accept: "application/json" };
  for (var k in extra || {}) h[k] = extra[k];
  return h;
}

/** GET or another verb on the Kubernetes API; throws ApiError; a 401 signs out. */
async function api(path, opts) {
  opts = opts || {};
  var res = await fetch(BASE + path, {
    method: opts.method || "GET", headers: headers(opts.headers), body: opts.body,
    signal: opts.signal, cache: "no-store",
  });
  if (!res.ok) {
    var err = await failure(res);
    if (res.status === 401 && !opts.quiet401) signOut(err);
    throw err;
  }
  return res.status === 204 ? null : res.json();
}

/**
 * A streamed watch (?watch=1) read with fetch: calls onEvent per event until the stream ends,
 * the signal aborts, or the server sends an ERROR event (returned, e.g. 410 Expired).
 */
async function watchStream(path, rv, onEvent, signal, accept) {
  var sep = path.indexOf("?") < 0 ? "?" : "&";
  var url = BASE + path + sep + "watch=1&allowWatchBookmarks=true" + (rv ? "&resourceVersion=" + encodeURIComponent(rv) : "");
  var res = await fetch(url, { headers: headers(accept ? { accept: accept } : null), signal: signal, cache: "no-store" });
  if (!res.ok) {
    var err = await failure(res);
    if (res.status === 401) signOut(err);
    throw err;
  }
  var reader = res.body.getReader(), decoder = new TextDecoder(), buf = "";
  for (;;) {
    var chunk = await reader.read();
    if (chunk.done) return null;
    buf += decoder.decode(chunk.value, { stream: true });
    var nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      var line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (!line) continue;
      var ev = JSON.parse(line);
      if (ev.type === "ERROR") return ev.object;
      onEvent(ev);
    }
  }
}

function keyOf(o) { return (o.metadata.namespace || "") + "/" + o.metadata.name; }

/**
 * List then watch path (a collection URL, with its query), keeping a map of the objects and
 * calling onChange(map, error) after each batch of changes (at most once per frame). Re-lists
 * when the watch ends or its resourceVersion expired. stop() ends it.
 */
function informer(path, onChange, signal) {
  var items = new Map(), scheduled = false, rv = "";
  function changed() {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(function () { scheduled = false; if (!signal.aborted) onChange(items, null); });
  }
  function apply(ev) {
    if (ev.type === "BOOKMARK") { rv = ev.object.metadata.resourceVersion; return; }
    var o = ev.object;
    if (ev.type === "DELETED") items.delete(keyOf(o)); else items.set(keyOf(o), o);
    rv = o.metadata.resourceVersion;
    changed();
  }
  async function run() {
    while (!signal.aborted) {
      try {
        var list = await api(path, { signal: signal });
        items = new Map();
        for (var i = 0; i < list.items.length; i++) items.set(keyOf(list.items[i]), list.items[i]);
        rv = list.metadata.resourceVersion;
        changed();
        for (;;) {
          var end = await watchStream(path, rv, apply, signal);
          if (signal.aborted) return;
          if (end && end.code === 410) break; // expired: list again
          if (end) throw new ApiError(end.code, end.reason, end.message);
        }
      } catch (e) {
        if (signal.aborted) return;
        if (e instanceof ApiError) { onChange(items, e); if (e.status === 401 || e.status === 403 || e.status === 404) return; }
        await new Promise(function (r) { setTimeout(r, 1000); });
      }
    }
  }
  run();
}

/**
 * List path as server-side Tables (what kubectl get asks for), in pages: a first one of
 * firstPage rows, drawn at once, then the rest with the list's continue token (one snapshot);
 * then watch it as Tables from the list's version. The view's callbacks: reset() before a
 * fresh list, page(table, more) per page (more: rows still to come, or 0), event(type, row) per
 * watch event (applied as it arrives), error(e). Lists again when the watch's version
 * expired (410) or the continue token did.
 */
function tableInformer(path, firstPage, view, signal) {
  var sep = path.indexOf("?") < 0 ? "?" : "&";
  var opts = { signal: signal, headers: { accept: TABLE_ACCEPT } };
  function rest(t) {
    return t.metadata.continue ? api(path + sep + "continue=" + encodeURIComponent(t.metadata.continue), opts) : null;
  }
  async function list() {
    var t = await api(path + sep + "limit=" + firstPage, opts);
    var rv = t.metadata.resourceVersion;
    view.reset();
    for (;;) {
      // the next page is on its way while this one is drawn
      var next = rest(t);
      if (next) next.catch(function () { /* awaited below */ });
      view.page(t, next ? t.metadata.remainingItemCount || 1 : 0);
      if (!next) return rv;
      t = await next;
    }
  }
  async function run() {
    while (!signal.aborted) {
      try {
        var rv = await list();
        for (;;) {
          var end = await watchStream(path, rv, function (ev) {
            var t = ev.object;
            if (t.metadata && t.metadata.resourceVersion) rv = t.metadata.resourceVersion;
            if (ev.type !== "BOOKMARK" && t.rows && t.rows.length) view.event(ev.type, t.rows[0]);
          }, signal, TABLE_ACCEPT);
          if (signal.aborted) return;
          if (end && end.code === 410) break; // expired: list again
          if (end) throw new ApiError(end.code, end.reason, end.message);
        }
      } catch (e) {
        if (signal.aborted) return;
        if (e instanceof ApiError && e.status === 410) continue; // the continue token expired
        if (e instanceof ApiError) { view.error(e); if (e.status === 401 || e.status === 403 || e.status === 404) return; }
        await new Promise(function (r) { setTimeout(r, 1000); });
      }
    }
  }
  run();
}

/** An element: h("td", {class: "num"}, "3", child, ...); text is always text, never HTML. */
function h(tag, attrs) {
  var e = document.createElement(tag);
  for (var k in attrs || {}) {
    var v = attrs[k];
    if (v === undefined || v === null || v === false) continue;
    if (k === "text") e.textContent = v;
    else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (var i = 2; i < arguments.length; i++) {
    var c = arguments[i];
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) c.forEach(function (x) { if (x) e.append(x); });
    else e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

function age(ts) {
  if (!ts) return "";
  var s = Math.max(0, Math.floor((Date.now() - Date.parse(ts)) / 1000));
  if (s < 120) return s + "s";
  var m = Math.floor(s / 60);
  if (m < 120) return m + "m";
  var hr = Math.floor(m / 60);
  return hr < 48 ? hr + "h" : Math.floor(hr / 24) + "d";
}

function podHref(ns, name) { return "#/pod/" + encodeURIComponent(ns) + "/" + encodeURIComponent(name); }

function namespace() { return sessionStorage.getItem(NS_KEY) || ""; }

/** A collection's path in the chosen namespace, or across all namespaces. */
function scoped(prefix, resource) {
  var ns = namespace();
  return prefix + (ns ? "/namespaces/" + encodeURIComponent(ns) : "") + "/" + resource;
}

function errorText(e) {
  if (e instanceof ApiError) {
    if (e.status === 403) return "Forbidden (403): " + e.message + (namespace() ? "" : " (choose a namespace you may read in the Namespace field)");
    return e.reason + " (" + e.status + "): " + e.message;
  }
  return String(e && e.message || e);
}
`;
