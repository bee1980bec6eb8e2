// A fair queue in front of workerd. Locally one workerd thread runs the Worker and every
// Durable Object, and it does not serve its connections in turn when saturated: measured, a
// request could wait seconds while requests on other connections were served again and
// again. The front door therefore lets at most `limit` ordinary requests into workerd at a
// time and admits the others in arrival order as answers complete. Long-running requests
// (watches, upgrades to WebSocket or SPDY, log follows, proxies) are never held or counted,
// and a request that holds its place longer than `holdMs` gives it up, so a slow request
// (or one waiting on another through this door, as a webhook may) never stalls the rest.

/** A request's first line and headers, when `chunk` starts one. */
export function requestHead(chunk) {
  const end = chunk.indexOf("\r\n\r\n");
  const head = chunk.toString("latin1", 0, end < 0 ? Math.min(chunk.length, 4096) : end);
  const line = /^([A-Z]+) (\S+) HTTP\/1\.([01])\r?(?:\n|$)/.exec(head);
  if (!line) return undefined;
  return {
    method: line[1],
    target: line[2],
    version: `1.${line[3]}`,
    headers: head.slice(line[0].length).toLowerCase(),
  };
}

const STREAMING = new Set(["exec", "attach", "portforward", "proxy"]);

/** Whether a request may run indefinitely: it must not hold a place in the queue. */
export function longRunning({ target, headers }) {
  if (/(^|\n)upgrade:/.test(headers)) return true;
  const [path, query = ""] = target.split("?", 2);
  if (/(^|&)(watch|follow)=(1|true)(&|$)/i.test(query)) return true;
  // /api/v1/... or /apis/<group>/<version>/...: the old /watch/ prefix, or a streaming
  // subresource (<resource>/<name>/<sub>, under namespaces/<ns>/ when namespaced)
  const segs = path.split("/").slice(1);
  let rest = segs[0] === "api" ? segs.slice(2) : segs[0] === "apis" ? segs.slice(3) : [];
  if (rest[0] === "watch") return true;
  if (rest[0] === "namespaces" && rest.length > 3) rest = rest.slice(2);
  return STREAMING.has(rest[2]);
}

export function admissionQueue({ limit = 32, holdMs = 2000 } = {}) {
  let running = 0;
  /** admit callbacks of requests waiting, oldest first */
  const waiting = [];

  const next = () => {
    while (running < limit && waiting.length) {
      running++;
      waiting.shift()();
    }
  };

  return {
    /**
     * Calls `admit(release)` once the request may go in; `release` (idempotent) gives its
     * place back and is due when its answer completes. Returns a cancel for a request whose
     * client went away while waiting.
     */
    enter(admit) {
      let state = "waiting";
      let timer;
      const release = () => {
        if (state !== "running") return;
        state = "done";
        clearTimeout(timer);
        running--;
        next();
      };
      const go = () => {
        state = "running";
        timer = setTimeout(release, holdMs);
        timer.unref?.();
        admit(release);
      };
      waiting.push(go);
      next();
      return () => {
        if (state === "waiting") {
          state = "done";
          const i = waiting.indexOf(go);
          if (i >= 0) waiting.splice(i, 1);
        } else release();
      };
    },
    stats: () => ({ running, waiting: waiting.length }),
  };
}
