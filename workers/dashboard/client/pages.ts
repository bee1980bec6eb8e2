// The list views: nodes, namespaces, workloads, pods and events. Each lists then watches its
// collections (informer in core) and redraws its table when they change.
export const PAGES = String.raw`
/** Text made safe to put in HTML. */
function esc(v) {
  return String(v).replace(/[&<>"']/g, function (c) { return "&#" + c.charCodeAt(0) + ";"; });
}

/** Markup for one element with text content: a cell value that is not plain text. */
function tag(name, attrs, text) {
  var a = "";
  for (var k in attrs || {}) if (attrs[k] !== undefined && attrs[k] !== null && attrs[k] !== "") a += " " + k + "=\"" + esc(attrs[k]) + "\"";
  return { html: "<" + name + a + ">" + esc(text) + "</" + name + ">" };
}

function cellHtml(v) { return v && v.html !== undefined ? v.html : esc(v === undefined || v === null ? "" : v); }

/** A table cell from a column's value (text, or tag() markup) for the DOM-built tables. */
function cellNode(cls, v) {
  var td = h("td", { class: cls });
  if (v && v.html !== undefined) td.innerHTML = v.html; else td.textContent = v === undefined || v === null ? "" : String(v);
  return td;
}

/**
 * A titled table that lists then watches path; cols: [heading, cell(obj) -> text|tag(), class?].
 * Rows are markup cached per object version (and age), so a change redraws only its own row.
 */
function liveTable(root, title, path, cols, signal, opts) {
  opts = opts || {};
  var count = h("span", { class: "count" });
  var err = h("p", { class: "error", role: "alert" });
  var body = h("tbody");
  var table = h("table", { "data-table": opts.id || title },
    h("thead", null, h("tr", null, cols.map(function (c) { return h("th", { scope: "col", class: c[2] }, c[0]); }))), body);
  root.append(h(opts.level || "h2", null, title, " ", count), err, table);
  var cache = new Map(), shown = [], last = new Map(), lastErr = null;
  function rowHtml(o) {
    var k = keyOf(o);
    var stamp = o.metadata.resourceVersion + "|" + age(o.metadata.creationTimestamp) + "|" + (opts.stamp ? opts.stamp(o) : "");
    var c = cache.get(k);
    if (c && c.stamp === stamp) return c;
    var html = "<tr data-key=\"" + esc(k) + "\">" + cols.map(function (col) {
      return "<td" + (col[2] ? " class=\"" + col[2] + "\"" : "") + ">" + cellHtml(col[1](o)) + "</td>";
    }).join("") + "</tr>";
    c = { key: k, stamp: stamp, html: html };
    cache.set(k, c);
    return c;
  }
  function draw(items, e) {
    last = items; lastErr = e;
    err.textContent = e ? errorText(e) : "";
    var list = Array.from(items.values());
    list.sort(opts.sort || function (a, b) { return keyOf(a) < keyOf(b) ? -1 : 1; });
    if (opts.limit && list.length > opts.limit) list = list.slice(0, opts.limit);
    count.textContent = "(" + items.size + ")";
    var rows = list.map(rowHtml);
    var same = rows.length === shown.length && rows.length > 0 && rows.every(function (r, i) { return r.key === shown[i].key; });
    if (same) {
      // the same rows in the same order: replace only the rows that changed
      for (var i = 0; i < rows.length; i++) if (rows[i] !== shown[i]) body.rows[i].outerHTML = rows[i].html;
    } else if (rows.length) {
      body.innerHTML = rows.map(function (r) { return r.html; }).join("");
    } else {
      body.replaceChildren(e ? "" : h("tr", { class: "empty" }, h("td", { colspan: cols.length, class: "notice" }, "None.")));
    }
    shown = rows;
    if (cache.size > 2 * items.size + 100) cache.forEach(function (_v, k) { if (!items.has(k)) cache.delete(k); });
    table.setAttribute("data-loaded", "true");
    if (opts.onChange) opts.onChange(items);
  }
  informer(path, draw, signal);
  return { refresh: function () { draw(last, lastErr); } };
}

function nsCol() { return namespace() ? [] : [["Namespace", function (o) { return o.metadata.namespace; }]]; }

function quantity(r, k) { return (r && r[k]) || ""; }

VIEWS.nodes = function (root, _args, signal) {
  root.append(h("h1", { text: "Nodes" }));
  // pods per node from a cluster-wide pod list (when the user may read it)
  var perNode = null, table = null;
  informer("/api/v1/pods", function (items, e) {
    if (e) return;
    perNode = {};
    items.forEach(function (p) {
      var n = p.spec.nodeName, ph = p.status && p.status.phase;
      if (n && ph !== "Succeeded" && ph !== "Failed") perNode[n] = (perNode[n] || 0) + 1;
    });
    if (table) table.refresh();
  }, signal);
  var pods = function (n) { return perNode ? String(perNode[n.metadata.name] || 0) : "?"; };
  table = liveTable(root, "All nodes", "/api/v1/nodes", [
    ["Name", function (n) { return n.metadata.name; }],
    ["Ready", function (n) {
      var c = ((n.status && n.status.conditions) || []).filter(function (x) { return x.type === "Ready"; })[0];
      var ok = c && c.status === "True";
      return tag("span", { class: ok ? "ok" : "bad" }, ok ? "Ready" : "NotReady" + (c && c.reason ? " (" + c.reason + ")" : ""));
    }],
    ["Pods", function (n) { return pods(n) + " / " + quantity(n.status.capacity, "pods"); }, "num"],
    ["CPU", function (n) { return quantity(n.status.capacity, "cpu"); }, "num"],
    ["Memory", function (n) { return quantity(n.status.capacity, "memory"); }, "num"],
    ["Version", function (n) { return (n.status.nodeInfo && n.status.nodeInfo.kubeletVersion) || ""; }],
    ["Age", function (n) { return age(n.metadata.creationTimestamp); }, "num"],
  ], signal, { id: "nodes", stamp: pods });
};

VIEWS.namespaces = function (root, _args, signal) {
  root.append(h("h1", { text: "Namespaces" }));
  liveTable(root, "All namespaces", "/api/v1/namespaces", [
    ["Name", function (n) {
      return tag("a", { href: "#/ns/" + encodeURIComponent(n.metadata.name) }, n.metadata.name);
    }],
    ["Status", function (n) { return (n.status && n.status.phase) || ""; }],
    ["Age", function (n) { return age(n.metadata.creationTimestamp); }, "num"],
  ], signal, { id: "namespaces" });
};

// #/ns/<name>: scope the views to a namespace, then show its pods
VIEWS.ns = function (_root, args) {
  sessionStorage.setItem(NS_KEY, args[0] || "");
  $("ns").value = args[0] || "";
  location.replace("#/pods");
};

function ratio(a, b) { return String(a || 0) + "/" + String(b || 0); }

VIEWS.workloads = function (root, _args, signal) {
  root.append(h("h1", { text: "Workloads" }));
  var name = ["Name", function (o) { return o.metadata.name; }];
  var old = ["Age", function (o) { return age(o.metadata.creationTimestamp); }, "num"];
  liveTable(root, "Deployments", scoped("/apis/apps/v1", "deployments"), nsCol().concat([name,
    ["Ready", function (d) { return ratio(d.status && d.status.readyReplicas, d.spec.replicas); }, "num"],
    ["Up-to-date", function (d) { return String((d.status && d.status.updatedReplicas) || 0); }, "num"],
    ["Available", function (d) { return String((d.status && d.status.availableReplicas) || 0); }, "num"], old]), signal, { id: "deployments" });
  liveTable(root, "ReplicaSets", scoped("/apis/apps/v1", "replicasets"), nsCol().concat([name,
    ["Desired", function (r) { return String(r.spec.replicas || 0); }, "num"],
    ["Current", function (r) { return String((r.status && r.status.replicas) || 0); }, "num"],
    ["Ready", function (r) { return String((r.status && r.status.readyReplicas) || 0); }, "num"], old]), signal, { id: "replicasets" });
  liveTable(root, "StatefulSets", scoped("/apis/apps/v1", "statefulsets"), nsCol().concat([name,
    ["Ready", function (s) { return ratio(s.status && s.status.readyReplicas, s.spec.replicas); }, "num"], old]), signal, { id: "statefulsets" });
  liveTable(root, "DaemonSets", scoped("/apis/apps/v1", "daemonsets"), nsCol().concat([name,
    ["Desired", function (d) { return String((d.status && d.status.desiredNumberScheduled) || 0); }, "num"],
    ["Current", function (d) { return String((d.status && d.status.currentNumberScheduled) || 0); }, "num"],
    ["Ready", function (d) { return String((d.status && d.status.numberReady) || 0); }, "num"], old]), signal, { id: "daemonsets" });
  liveTable(root, "Jobs", scoped("/apis/batch/v1", "jobs"), nsCol().concat([name,
    ["Completions", function (j) { return ratio(j.status && j.status.succeeded, j.spec.completions || 1); }, "num"],
    ["Status", function (j) {
      var c = ((j.status && j.status.conditions) || []).filter(function (x) { return x.status === "True"; }).map(function (x) { return x.type; });
      return c.join(", ") || ((j.status && j.status.active) ? "Running" : "");
    }], old]), signal, { id: "jobs" });
};

/** A pod's status as kubectl get pods words it (the main cases). */
function podStatus(p) {
  var st = p.status || {};
  if (p.metadata.deletionTimestamp) return "Terminating";
  var reason = st.reason || st.phase || "Pending";
  var inits = st.initContainerStatuses || [];
  for (var i = 0; i < inits.length; i++) {
    var s = inits[i].state || {};
    if (s.terminated && s.terminated.exitCode === 0) continue;
    if (s.terminated) return "Init:" + (s.terminated.reason || "Error");
    if (s.waiting && s.waiting.reason && s.waiting.reason !== "PodInitializing") return "Init:" + s.waiting.reason;
    return "Init:" + i + "/" + (p.spec.initContainers || []).length;
  }
  (st.containerStatuses || []).forEach(function (c) {
    var s = c.state || {};
    if (s.waiting && s.waiting.reason) reason = s.waiting.reason;
    else if (s.terminated && s.terminated.reason) reason = s.terminated.reason;
  });
  return reason;
}

function statusClass(s) {
  if (/^(Running|Succeeded|Completed)$/.test(s)) return "ok";
  if (/Err|BackOff|Fail|Error|Unknown|OOM/.test(s)) return "bad";
  return "warn";
}

// The pods page reads the server's Table (kubectl get's columns, so its status words are the
// server's) a first screenful at once and the rest after, then keeps each row live from a
// Table watch: a change replaces its own row as the event arrives.
var PODS_FIRST_PAGE = 100;

VIEWS.pods = function (root, _args, signal) {
  root.append(h("h1", { text: "Pods" }));
  var all = !namespace();
  var heads = (all ? [["Namespace"]] : []).concat([["Name"], ["Ready", "num"], ["Status"], ["Restarts", "num"],
    ["Node"], ["IP", "mono"], ["Age", "num"]]);
  var count = h("span", { class: "count" });
  var err = h("p", { class: "error", role: "alert" });
  var body = h("tbody");
  var none = h("tfoot", { hidden: true }, h("tr", { class: "empty" }, h("td", { colspan: heads.length, class: "notice" }, "None.")));
  var table = h("table", { "data-table": "pods" },
    h("thead", null, h("tr", null, heads.map(function (c) { return h("th", { scope: "col", class: c[1] }, c[0]); }))), body, none);
  root.append(h("h2", null, all ? "Pods in all namespaces" : "Pods in " + namespace(), " ", count), err, table);

  // rows in the server's order (namespace, then name), keys[i] drawn as body.rows[i]
  var keys = [], at = {}, pending = 0;
  function colsOf(t) {
    if (!t.columnDefinitions || !t.columnDefinitions.length) return;
    at = {};
    t.columnDefinitions.forEach(function (c, i) { at[c.name] = i; });
  }
  function cell(row, name) {
    var v = at[name] === undefined ? "" : row.cells[at[name]];
    return v === undefined || v === null || v === "<none>" ? "" : String(v);
  }
  function meta(row) { return (row.object && row.object.metadata) || {}; }
  function keyOfRow(row) { var m = meta(row); return [m.namespace || "", m.name || ""]; }
  function before(a, b) { return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]); }
  /** Where key is, or would go, in keys. */
  function find(k) {
    var lo = 0, hi = keys.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (before(keys[mid], k)) lo = mid + 1; else hi = mid; }
    return lo;
  }
  function same(a, b) { return !!a && !!b && a[0] === b[0] && a[1] === b[1]; }
  function rowHtml(row) {
    var m = meta(row), st = cell(row, "Status");
    return "<tr data-key=\"" + esc((m.namespace || "") + "/" + m.name) + "\">" +
      (all ? "<td>" + esc(m.namespace || "") + "</td>" : "") +
      "<td>" + tag("a", { href: podHref(m.namespace, m.name) }, m.name).html + "</td>" +
      "<td class=\"num\">" + esc(cell(row, "Ready")) + "</td>" +
      "<td>" + tag("span", { class: statusClass(st), "data-status": st }, st).html + "</td>" +
      "<td class=\"num\">" + esc(cell(row, "Restarts")) + "</td>" +
      "<td>" + esc(cell(row, "Node")) + "</td>" +
      "<td class=\"mono\">" + esc(cell(row, "IP")) + "</td>" +
      "<td class=\"num\" data-created=\"" + esc(m.creationTimestamp || "") + "\">" + esc(age(m.creationTimestamp)) + "</td></tr>";
  }
  // ages count up without a change to the pod: each second for the rows on screen only (new
  // text in every row would lay the whole table out again, delaying the next change)
  var onScreen = new Set();
  var seen = new IntersectionObserver(function (entries) {
    entries.forEach(function (e) {
      if (e.isIntersecting) { onScreen.add(e.target); refreshAge(e.target); } else onScreen.delete(e.target);
    });
  });
  function refreshAge(tr) {
    var td = tr.lastElementChild, a = age(td.getAttribute("data-created"));
    if (td.textContent !== a) td.textContent = a;
  }
  function watchAge(tr) { seen.observe(tr); }
  function unwatchAge(tr) { seen.unobserve(tr); onScreen.delete(tr); }
  var timer = setInterval(function () { onScreen.forEach(refreshAge); }, 1000);
  function counted() {
    count.textContent = "(" + (keys.length + pending) + ")";
    none.hidden = keys.length + pending > 0;
  }
  function onEvent(type, row) {
    var k = keyOfRow(row), i = find(k), here = same(keys[i], k);
    if (type === "DELETED") {
      if (here) { keys.splice(i, 1); unwatchAge(body.rows[i]); body.rows[i].remove(); }
    } else if (here) {
      var old = body.rows[i];
      old.outerHTML = rowHtml(row);
      unwatchAge(old);
      watchAge(body.rows[i]);
    } else {
      keys.splice(i, 0, k);
      if (i < body.rows.length) body.rows[i].insertAdjacentHTML("beforebegin", rowHtml(row));
      else body.insertAdjacentHTML("beforeend", rowHtml(row));
      watchAge(body.rows[i]);
    }
    counted();
  }
  tableInformer(scoped("/api/v1", "pods"), PODS_FIRST_PAGE, {
    reset: function () { keys = []; body.replaceChildren(); seen.disconnect(); onScreen.clear(); },
    page: function (t, more) {
      var began = performance.now();
      colsOf(t);
      err.textContent = "";
      // rows after the last one drawn go in as one piece of markup; any other goes in its place
      var html = "";
      function flush() {
        var from = body.rows.length;
        body.insertAdjacentHTML("beforeend", html);
        html = "";
        for (var j = from; j < body.rows.length; j++) watchAge(body.rows[j]);
      }
      for (var i = 0; i < t.rows.length; i++) {
        var k = keyOfRow(t.rows[i]);
        if (keys.length && !before(keys[keys.length - 1], k)) { flush(); onEvent("ADDED", t.rows[i]); continue; }
        keys.push(k);
        html += rowHtml(t.rows[i]);
      }
      flush();
      pending = more;
      counted();
      table.setAttribute("data-loaded", "true");
      // the page's own work on a page of rows, for DevTools and the dashboard bench
      performance.measure("pods: rows drawn", { start: began });
    },
    event: onEvent,
    error: function (e) { err.textContent = errorText(e); table.setAttribute("data-loaded", "true"); },
  }, signal);

  signal.addEventListener("abort", function () { clearInterval(timer); seen.disconnect(); });
};

function eventLast(e) { return e.lastTimestamp || e.eventTime || e.firstTimestamp || e.metadata.creationTimestamp; }

function eventColumns(withObject) {
  return [
    ["Last seen", function (e) { return age(eventLast(e)); }, "num"],
    ["Type", function (e) { return tag("span", { class: e.type === "Warning" ? "bad" : "" }, e.type || ""); }],
    ["Reason", function (e) { return e.reason || ""; }],
  ].concat(withObject ? [["Object", function (e) {
    var io = e.involvedObject || {};
    var label = (io.kind || "").toLowerCase() + "/" + io.name;
    return io.kind === "Pod" ? tag("a", { href: podHref(io.namespace, io.name) }, label) : label;
  }]] : []).concat([
    ["Count", function (e) { return String(e.count || 1); }, "num"],
    ["Message", function (e) { return e.message || ""; }],
  ]);
}

function byLastSeen(a, b) { return Date.parse(eventLast(b)) - Date.parse(eventLast(a)); }

VIEWS.events = function (root, _args, signal) {
  root.append(h("h1", { text: "Events" }));
  liveTable(root, namespace() ? "Events in " + namespace() : "Events in all namespaces", scoped("/api/v1", "events"),
    nsCol().concat(eventColumns(true)), signal, { id: "events", sort: byLastSeen, limit: 500 });
};
`;
