// FLOW.md's path as the pod page draws it: one box per stage, each with a state (done,
// failed, waiting, pending, skipped), a start, an end and a reason. The stages come from the
// pod's trace (GET .../podtraces/<pod>) when the server has one; otherwise, and for stages
// the trace lacks, they are read from the pod itself (conditions, container statuses,
// timestamps) and its events, which are only precise to the second.
export const FLOW = String.raw`
var FLOW_STAGES = [
  { id: "authn", step: "2.1", name: "Authentication", component: "apiserver" },
  { id: "authz", step: "2.2", name: "Authorization", component: "apiserver" },
  { id: "admission", step: "2.3", name: "Admission", component: "apiserver" },
  { id: "stored", step: "2.4", name: "Stored", component: "apiserver" },
  { id: "controller", step: "4", name: "Controller", component: "controller-manager" },
  { id: "scheduler", step: "5", name: "Scheduling", component: "scheduler" },
  { id: "agent", step: "6", name: "Node agent", component: "edgelet" },
  { id: "sandbox", step: "7.1", name: "Sandbox", component: "CRI" },
  { id: "cni", step: "8.1", name: "Network (CNI)", component: "CNI" },
  { id: "image", step: "9.2", name: "Image pull", component: "edgelet" },
  { id: "init", step: "9.1", name: "Init containers", component: "CRI" },
  { id: "containers", step: "9.3", name: "Containers", component: "CRI" },
  { id: "ready", step: "", name: "Ready", component: "edgelet" },
];

var IMAGE_ERRORS = ["ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName", "RegistryUnavailable"];
var CONTAINER_ERRORS = ["CrashLoopBackOff", "CreateContainerError", "CreateContainerConfigError", "RunContainerError",
  "PostStartHookError", "ContainerStatusUnknown", "Error", "OOMKilled", "StartError"];

/** Milliseconds since the epoch of an RFC 3339 time, fractions of a millisecond kept, or NaN. */
function parseTime(s) {
  if (!s) return NaN;
  var m = /^([^.]*)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/i.exec(String(s));
  if (!m) return Date.parse(s);
  return Date.parse(m[1] + m[3]) + (m[2] ? Number("0." + m[2]) * 1000 : 0);
}

function condition(pod, type) {
  var cs = (pod.status && pod.status.conditions) || [];
  for (var i = 0; i < cs.length; i++) if (cs[i].type === type) return cs[i];
  return null;
}

function eventTime(e) { return parseTime(e.lastTimestamp || e.eventTime || e.firstTimestamp || e.metadata.creationTimestamp); }

function eventsBy(events, reason) {
  return events.filter(function (e) { return e.reason === reason; }).sort(function (a, b) { return eventTime(a) - eventTime(b); });
}

function last(a) { return a.length ? a[a.length - 1] : null; }

function containerState(c) { return (c && c.state) || {}; }

/** The stages as read from the pod and its events: each {id, state, start, end, reason, detail, coarse}. */
function deriveFlow(pod, events) {
  events = events || [];
  var out = {};
  FLOW_STAGES.forEach(function (s) { out[s.id] = { id: s.id, state: "pending", start: NaN, end: NaN, reason: "", detail: "", coarse: true }; });
  if (!pod) return out;
  var spec = pod.spec || {}, status = pod.status || {};
  var set = function (id, state, start, end, reason, detail) {
    var s = out[id];
    s.state = state; s.start = start; s.end = end; s.reason = reason || ""; s.detail = detail || "";
  };
  var created = parseTime(pod.metadata.creationTimestamp);
  ["authn", "authz", "admission", "stored"].forEach(function (id) { set(id, "done", created, created); });
  out.stored.detail = "resourceVersion at creation; uid " + pod.metadata.uid;

  var owner = (pod.metadata.ownerReferences || []).filter(function (r) { return r.controller; })[0];
  if (owner) set("controller", "done", created, created, "", "created by " + owner.kind + "/" + owner.name);
  else set("controller", "skipped", NaN, NaN, "", "created directly, no owning controller");

  var sc = condition(pod, "PodScheduled");
  var scheduled = last(eventsBy(events, "Scheduled")), unschedulable = last(eventsBy(events, "FailedScheduling"));
  if ((sc && sc.status === "True") || spec.nodeName) {
    var at = sc && sc.status === "True" ? parseTime(sc.lastTransitionTime) : scheduled ? eventTime(scheduled) : NaN;
    set("scheduler", "done", created, at, "", scheduled ? scheduled.message : "bound to " + spec.nodeName);
  } else if (sc && sc.status === "False") {
    set("scheduler", "failed", created, NaN, sc.reason || "Unschedulable", sc.message || (unschedulable && unschedulable.message));
  } else if (unschedulable) {
    set("scheduler", "failed", created, NaN, "FailedScheduling", unschedulable.message);
  }

  var started = parseTime(status.startTime);
  if (status.phase === "Failed" && !status.startTime && status.reason) {
    set("agent", "failed", out.scheduler.end, NaN, status.reason, status.message);
  } else if (status.startTime) {
    set("agent", "done", out.scheduler.end, started, "", "on node " + (spec.nodeName || "?"));
  }

  var sandboxFail = last(eventsBy(events, "FailedCreatePodSandBox"));
  var rs = condition(pod, "PodReadyToStartContainers");
  var all = (status.initContainerStatuses || []).concat(status.containerStatuses || []);
  var beyondSandbox = all.some(function (c) { var st = containerState(c); return st.running || st.terminated || c.imageID; });
  if ((rs && rs.status === "True") || beyondSandbox) {
    var sbAt = rs && rs.status === "True" ? parseTime(rs.lastTransitionTime) : NaN;
    set("sandbox", "done", started, sbAt);
  } else if (sandboxFail) {
    set("sandbox", "failed", started, NaN, "FailedCreatePodSandBox", sandboxFail.message);
  }
  if (status.podIP) set("cni", "done", out.sandbox.end, out.sandbox.end, "", "pod IP " + status.podIP);
  else if (sandboxFail && /network|cni/i.test(sandboxFail.message || "")) set("cni", "failed", NaN, NaN, "FailedCreatePodSandBox", sandboxFail.message);

  var imageFail = all.filter(function (c) { var w = containerState(c).waiting; return w && IMAGE_ERRORS.indexOf(w.reason) >= 0; })[0];
  var pulling = eventsBy(events, "Pulling"), pulled = eventsBy(events, "Pulled");
  var allPulled = all.length > 0 && all.length >= (spec.containers || []).length + (spec.initContainers || []).length &&
    all.every(function (c) { var st = containerState(c); return c.imageID || st.running || st.terminated; });
  var pullStart = pulling.length ? eventTime(pulling[0]) : NaN;
  if (imageFail) {
    var w = containerState(imageFail).waiting;
    set("image", "failed", pullStart, NaN, w.reason, w.message || "");
  } else if (allPulled) {
    set("image", "done", isNaN(pullStart) ? out.cni.end : pullStart, pulled.length ? eventTime(last(pulled)) : NaN, "",
      pulled.map(function (e) { return e.message; }).join("; "));
  } else if (pulling.length) {
    set("image", "waiting", pullStart, NaN, "Pulling", last(pulling).message);
  }

  var inits = spec.initContainers || [], ics = status.initContainerStatuses || [];
  var initialized = condition(pod, "Initialized");
  if (!inits.length) set("init", "skipped", NaN, NaN, "", "no init containers");
  else {
    var bad = ics.filter(function (c) {
      var st = containerState(c);
      return (st.terminated && st.terminated.exitCode !== 0) || (st.waiting && CONTAINER_ERRORS.indexOf(st.waiting.reason) >= 0);
    })[0];
    var initStart = Math.min.apply(null, ics.map(function (c) { var st = containerState(c); return parseTime((st.running || st.terminated || {}).startedAt); }).filter(isFinite));
    if (bad) {
      var bs = containerState(bad);
      set("init", "failed", initStart, NaN, (bs.waiting || bs.terminated).reason, bad.name + ": " + ((bs.waiting || bs.terminated).message || "exit code " + (bs.terminated || {}).exitCode));
    } else if (initialized && initialized.status === "True") {
      set("init", "done", initStart, parseTime(initialized.lastTransitionTime), "", inits.length + " completed");
    } else if (ics.some(function (c) { return containerState(c).running; })) {
      set("init", "waiting", initStart, NaN, "Running", "");
    }
  }

  var cs = status.containerStatuses || [], want = (spec.containers || []).length;
  var failedC = cs.filter(function (c) {
    var st = containerState(c);
    return (st.waiting && CONTAINER_ERRORS.indexOf(st.waiting.reason) >= 0) ||
      (st.terminated && st.terminated.exitCode !== 0 && status.phase === "Failed");
  })[0];
  var starts = cs.map(function (c) { var st = containerState(c); return parseTime((st.running || st.terminated || {}).startedAt); }).filter(isFinite);
  if (failedC) {
    var fs = containerState(failedC), why = fs.waiting || fs.terminated;
    set("containers", "failed", NaN, NaN, why.reason, failedC.name + ": " + (why.message || "exit code " + why.exitCode));
  } else if (cs.length >= want && want > 0 && cs.every(function (c) { var st = containerState(c); return st.running || st.terminated; })) {
    set("containers", "done", Math.min.apply(null, starts), Math.max.apply(null, starts), "", cs.map(function (c) { return c.name; }).join(", ") + " started");
  } else if (starts.length) {
    set("containers", "waiting", Math.min.apply(null, starts), NaN, "Starting", "");
  }

  var ready = condition(pod, "Ready");
  if (ready && ready.status === "True") set("ready", "done", out.containers.end, parseTime(ready.lastTransitionTime), "", "Ready");
  else if (status.phase === "Succeeded") set("ready", "done", out.containers.end, NaN, "", "Completed");
  else if (out.containers.state === "done") set("ready", "waiting", out.containers.end, NaN, (ready && ready.reason) || "NotReady", (ready && ready.message) || "");
  return out;
}

/** Which chart box a trace stage belongs to (by FLOW.md step, or by its name). */
function flowStageOf(s) {
  var name = String(s.name || "").toLowerCase(), step = String(s.step || "");
  if (/ready|probe/.test(name)) return "ready";
  if (/image/.test(name) && !/secret/.test(name)) return "image";
  if (/sandbox/.test(name)) return "sandbox";
  if (/\bcni\b|network/.test(name)) return "cni";
  if (/init/.test(name) && /container/.test(name)) return "init";
  var parts = step.split("."), major = parts[0];
  if (step === "2.2") return "authz";
  if (step === "2.3" || major === "3") return "admission";
  if (step === "2.4") return "stored";
  if (major === "1" || major === "2") return "authn";
  if (major === "4") return "controller";
  if (major === "5") return "scheduler";
  if (major === "6") return "agent";
  if (major === "7") return "sandbox";
  if (major === "8") return "cni";
  if (step === "9.1") return "init";
  if (step === "9.2") return "image";
  if (major === "9") return "containers";
  return null;
}

var STATE_RANK = { failed: 4, waiting: 3, pending: 2, done: 1, skipped: 0 };

/** The boxes: the trace's stages where it has them, the pod's own record elsewhere. */
function flowStages(pod, events, trace) {
  var out = deriveFlow(pod, events);
  var byBox = {};
  ((trace && trace.stages) || []).forEach(function (s) {
    var id = flowStageOf(s);
    if (id) (byBox[id] = byBox[id] || []).push(s);
  });
  Object.keys(byBox).forEach(function (id) {
    var list = byBox[id], worst = list[0];
    list.forEach(function (s) { if ((STATE_RANK[s.state || "done"] || 0) > (STATE_RANK[worst.state || "done"] || 0)) worst = s; });
    var starts = list.map(function (s) { return parseTime(s.start); }).filter(isFinite);
    var ends = list.map(function (s) { return parseTime(s.end); }).filter(isFinite);
    out[id] = {
      id: id, state: worst.state || "done", coarse: false, traced: list,
      start: starts.length ? Math.min.apply(null, starts) : NaN,
      end: ends.length ? Math.max.apply(null, ends) : NaN,
      reason: worst.reason || "",
      detail: list.map(function (s) { return s.step + " " + s.name + (s.detail ? " " + JSON.stringify(s.detail) : ""); }).join("; "),
    };
  });
  // the first stage not yet reached is the one the pod waits on, unless the pod is finished
  var terminal = pod && (pod.status && (pod.status.phase === "Failed" || pod.status.phase === "Succeeded"));
  var blocked = false;
  FLOW_STAGES.forEach(function (s, i) {
    var st = out[s.id];
    if (blocked) { if (st.state === "waiting") st.state = "pending"; return; }
    if (st.state === "failed") { blocked = true; return; }
    if (st.state === "pending" && pod && !terminal) { st.state = "waiting"; blocked = true; }
    else if (st.state === "waiting") blocked = true;
    // a done stage without a start began when the one before it ended
    if (st.state === "done" && !isFinite(st.start) && i > 0) st.start = prevEnd(out, i);
  });
  return FLOW_STAGES.map(function (s) { var st = out[s.id]; st.meta = s; return st; });
}

function prevEnd(out, i) {
  for (var j = i - 1; j >= 0; j--) { var e = out[FLOW_STAGES[j].id].end; if (isFinite(e)) return e; }
  return NaN;
}

function formatDuration(ms, coarse) {
  if (!isFinite(ms) || ms < 0) return "";
  if (coarse) return ms < 1000 ? "< 1 s" : Math.round(ms / 1000) + " s";
  if (ms < 1) return "< 1 ms";
  if (ms < 1000) return Math.round(ms) + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
  return Math.floor(ms / 60000) + " m " + Math.round((ms % 60000) / 1000) + " s";
}

/** The label under a box's name: its duration, or how long it has waited. */
function stageLabel(st, now) {
  if (st.state === "done") return formatDuration(st.end - st.start, st.coarse) || "done";
  if (st.state === "waiting") {
    var since = isFinite(st.start) ? st.start : NaN;
    var d = formatDuration((now || Date.now()) - since, st.coarse);
    return d ? "waiting " + d : "waiting";
  }
  if (st.state === "failed") return "failed";
  if (st.state === "skipped") return "not needed";
  return "pending";
}
`;
