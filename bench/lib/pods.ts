// Pod bodies as `kubectl run NAME --image=nginx --labels=...` sends them, and a cheap way
// to pick an object's name out of a watch event line without parsing it.

/** Label that splits the benchmark pods into 100 groups (selector lists match 1%). */
export const GROUP_LABEL = "bench-group";
export const GROUPS = 100;

/**
 * The scheduler these pods name. With no nodes in the benchmark cluster, pods for the default
 * scheduler are retried forever (each retry writes a FailedScheduling Event), which measures
 * the scheduler, not the apiserver and store; so by default they name a scheduler that does
 * not exist and stay Pending untouched. BENCH_SCHEDULE=1 sends them to default-scheduler.
 */
export const SCHEDULER_NAME =
  process.env.BENCH_SCHEDULE === "1" ? "default-scheduler" : "edgeplane-bench-none";

export function podBody(name: string, i: number): string {
  return JSON.stringify({
    kind: "Pod",
    apiVersion: "v1",
    metadata: {
      name,
      creationTimestamp: null,
      labels: { run: name, app: "bench", [GROUP_LABEL]: `g${i % GROUPS}` },
    },
    spec: {
      containers: [
        {
          name,
          image: "nginx:1.27",
          ports: [{ containerPort: 80 }],
          resources: { requests: { cpu: "100m", memory: "64Mi" } },
        },
      ],
      restartPolicy: "Always",
      dnsPolicy: "ClusterFirst",
      schedulerName: SCHEDULER_NAME,
    },
    status: {},
  });
}

/**
 * The first `"name":"<prefix>..."` value in a JSON line: the object's name when names carry
 * a benchmark prefix no other field shares. A substring scan, not a parse, so 1,000 watchers
 * cost the client little.
 */
export function nameWithPrefix(line: string, prefix: string): string | undefined {
  const marker = `"name":"${prefix}`;
  const at = line.indexOf(marker);
  if (at < 0) return undefined;
  const start = at + 8;
  const end = line.indexOf('"', start);
  return end < 0 ? undefined : line.slice(start, end);
}
