// The pod page: FLOW.md's flow chart for one pod, redrawn live as watches on the pod and its
// events report changes (and the pod's trace, when the server answers for it), then the
// stage table, containers, conditions and events.
export const POD_PAGE = String.raw`
var TRACE_PATH = "/apis/trace.edgeplane.dev/v1alpha1/namespaces/";

function legend() {
  return h("p", { class: "legend", "aria-hidden": "true" }, ["done", "waiting", "failed", "pending", "skipped"].map(function (s) {
    return h("span", { class: "state-" + s }, "\u25A0 " + s);
  }));
}

function flowChart(stages, now) {
  return h("ol", { class: "flow", "aria-label": "The pod's path through FLOW.md, stage by stage" }, stages.map(function (st) {
    var label = stageLabel(st, now);
    return h("li", { "data-stage": st.id, "data-state": st.state, title: st.detail || "" },
      h("span", { class: "step" }, st.meta.step ? "step " + st.meta.step : "\u00A0"),
      h("span", { class: "name" }, st.meta.name),
      h("span", { class: "comp" }, st.meta.component),
      h("span", { class: "dur state-" + st.state }, label),
      st.reason ? h("span", { class: "why" }, st.reason) : null);
  }));
}

function stageTable(stages, created) {
  var rel = function (t, coarse) {
    return isFinite(t) && isFinite(created) ? "+" + formatDuration(t - created, coarse).replace(/^< 1 m?s$/, "0 s") : "";
  };
  return h("table", { "data-table": "stages" },
    h("thead", null, h("tr", null, ["Step", "Stage", "Component", "State", "Started", "Duration", "Detail"].map(function (c) { return h("th", { scope: "col" }, c); }))),
    h("tbody", null, stages.map(function (st) {
      return h("tr", { "data-stage": st.id },
        h("td", null, st.meta.step), h("td", null, st.meta.name), h("td", null, st.meta.component),
        h("td", { class: "state-" + st.state }, st.state), h("td", { class: "num" }, rel(st.start, st.coarse)),
        h("td", { class: "num" }, st.state === "done" ? formatDuration(st.end - st.start, st.coarse) : ""),
        h("td", null, [st.reason, st.detail].filter(Boolean).join(": ")));
    })));
}

function containerRows(pod) {
  var st = pod.status || {};
  var all = (st.initContainerStatuses || []).map(function (c) { return [c, "init"]; })
    .concat((st.containerStatuses || []).map(function (c) { return [c, "app"]; }));
  return h("table", { "data-table": "containers" },
    h("thead", null, h("tr", null, ["Container", "Kind", "Image", "State", "Ready", "Restarts"].map(function (c) { return h("th", { scope: "col" }, c); }))),
    h("tbody", null, all.map(function (pair) {
      var c = pair[0], s = c.state || {}, k = Object.keys(s)[0] || "";
      var why = (s[k] && (s[k].reason || s[k].startedAt)) || "";
      return h("tr", null, h("td", null, c.name), h("td", null, pair[1]), h("td", { class: "mono" }, c.image),
        h("td", null, k + (why ? " (" + why + ")" : "")), h("td", null, c.ready ? "yes" : "no"),
        h("td", { class: "num" }, String(c.restartCount || 0)));
    })));
}

function conditionRows(pod) {
  var cs = (pod.status && pod.status.conditions) || [];
  return h("table", { "data-table": "conditions" },
    h("thead", null, h("tr", null, ["Condition", "Status", "Since", "Reason", "Message"].map(function (c) { return h("th", { scope: "col" }, c); }))),
    h("tbody", null, cs.map(function (c) {
      return h("tr", null, h("td", null, c.type), h("td", { class: c.status === "True" ? "ok" : "warn" }, c.status),
        h("td", null, c.lastTransitionTime || ""), h("td", null, c.reason || ""), h("td", null, c.message || ""));
    })));
}

VIEWS.pod = function (root, args, signal) {
  var ns = args[0] || "", name = args[1] || "";
  var pod = null, events = [], trace = null, traceAt = 0, traceTimer = null;
  var title = h("h1", null, "Pod " + ns + "/" + name);
  var status = h("p", { id: "pod-status", role: "status" });
  var err = h("p", { class: "error", role: "alert" });
  var facts = h("dl", { class: "facts" });
  var source = h("p", { class: "source", id: "flow-source" });
  var chart = h("div", { id: "flow" });
  var table = h("div");
  var details = h("div");
  root.append(h("p", null, h("a", { href: "#/pods" }, "\u2190 Pods")), title, status, err, facts,
    h("h2", null, "Flow"), legend(), source, chart, table, details);

  function render() {
    var now = Date.now();
    var stages = flowStages(pod, events, trace);
    chart.replaceChildren(flowChart(stages, now));
    var created = pod ? parseTime(pod.metadata.creationTimestamp) : NaN;
    table.replaceChildren(h("h2", null, "Stages"), stageTable(stages, created));
    source.textContent = trace ? "Timings from the pod's trace (" + trace.stages.length + " spans)." :
      "Timings from the pod's conditions, container statuses and events (to the second).";
    if (!pod) {
      status.textContent = "Waiting for pod " + ns + "/" + name + " to exist\u2026";
      status.setAttribute("data-status", "absent");
      facts.replaceChildren(); details.replaceChildren();
      return;
    }
    var s = podStatus(pod);
    status.textContent = "Status: " + s;
    status.setAttribute("data-status", s);
    var st = pod.status || {};
    facts.replaceChildren.apply(facts, [["Node", pod.spec.nodeName || "(not scheduled)"], ["Pod IP", st.podIP || ""],
      ["Phase", st.phase || ""], ["QoS class", st.qosClass || ""], ["Created", pod.metadata.creationTimestamp]]
      .flatMap(function (f) { return [h("dt", null, f[0]), h("dd", null, f[1])]; }));
    var evs = events.slice().sort(byLastSeen);
    details.replaceChildren(h("h2", null, "Containers"), containerRows(pod), h("h2", null, "Conditions"), conditionRows(pod),
      h("h2", null, "Events"), h("table", { "data-table": "pod-events" },
        h("thead", null, h("tr", null, eventColumns(false).map(function (c) { return h("th", { scope: "col", class: c[2] }, c[0]); }))),
        h("tbody", null, evs.map(function (e) { return h("tr", null, eventColumns(false).map(function (c) { return cellNode(c[2], c[1](e)); })); }))));
  }

  // the trace, when the server has one: asked again on each change, at most twice a second
  function refreshTrace() {
    if (traceTimer || !pod) return;
    var wait = Math.max(0, traceAt + 500 - Date.now());
    traceTimer = setTimeout(async function () {
      traceTimer = null; traceAt = Date.now();
      try {
        var t = await api(TRACE_PATH + encodeURIComponent(ns) + "/podtraces/" + encodeURIComponent(name), { signal: signal });
        trace = t && Array.isArray(t.stages) ? t : null;
      } catch (e) {
        trace = null; // 404 (no trace API, or no trace yet) or 403: the pod's own record is drawn
      }
      if (!signal.aborted) render();
    }, wait);
  }

  var pods = "/api/v1/namespaces/" + encodeURIComponent(ns) + "/pods?fieldSelector=" + encodeURIComponent("metadata.name=" + name);
  informer(pods, function (items, e) {
    err.textContent = e ? errorText(e) : "";
    var p = items.get(ns + "/" + name) || null;
    if (p && pod && p.metadata.uid !== pod.metadata.uid) trace = null;
    pod = p;
    render();
    refreshTrace();
  }, signal);
  var evPath = "/api/v1/namespaces/" + encodeURIComponent(ns) + "/events?fieldSelector=" + encodeURIComponent("involvedObject.name=" + name);
  informer(evPath, function (items) {
    events = Array.from(items.values()).filter(function (e) {
      var io = e.involvedObject || {};
      return io.kind === "Pod" && (!pod || !io.uid || io.uid === pod.metadata.uid);
    });
    render();
  }, signal);
  // a waiting stage's label counts up
  var tick = setInterval(function () { if (chart.querySelector("[data-state=waiting]")) render(); }, 1000);
  signal.addEventListener("abort", function () { clearInterval(tick); if (traceTimer) clearTimeout(traceTimer); });
  render();
};
`;
