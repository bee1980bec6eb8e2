// Moving from client-side to server-side apply with real kubectl 1.32, as upstream documents it:
// `kubectl apply -f`, then `kubectl apply --server-side -f` (which migrates the client-side
// manager's fields to "kubectl" and applies again), then `kubectl diff --server-side -f`. None
// may conflict or warn, for kinds whose live objects hold what the server defaulted into atomic
// fields (a fieldRef, claim templates) or generated (a Job's selector and template labels).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freshNamespace, hasKubectl, kubectl, shared } from "../helpers/cluster";

const t = shared();
const tmp = mkdtempSync(join(tmpdir(), "edgeplane-apply-migration-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const k = (args: string[]) => kubectl(t, args);

const container = (name: string, extra = "") => `      - name: ${name}
        image: edgeplane/busybox:1
        command: ["sleep", "3600"]${extra}`;

/** Each manifest, and an edit a later client-side apply makes to it (before -> after). */
const MANIFESTS: Record<string, { yaml: (ns: string) => string; edit: [string, string] }> = {
  "statefulset.apps/web": {
    yaml: (ns) => `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
  namespace: ${ns}
spec:
  serviceName: web
  replicas: 0
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
${container("web", "\n        volumeMounts:\n        - {name: data, mountPath: /data}")}
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      accessModes: ["ReadWriteOnce"]
      resources:
        requests:
          storage: 1Gi
`,
    edit: ["replicas: 0", "replicas: 0\n  minReadySeconds: 3"],
  },
  "deployment.apps/cassandra": {
    yaml: (ns) => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: cassandra
  namespace: ${ns}
spec:
  replicas: 0
  selector:
    matchLabels: {app: cassandra}
  template:
    metadata:
      labels: {app: cassandra}
    spec:
      containers:
${container(
  "cassandra",
  `
        env:
        - name: POD_IP
          valueFrom:
            fieldRef:
              fieldPath: status.podIP
        - name: MEMORY
          valueFrom:
            resourceFieldRef:
              resource: limits.memory`,
)}
`,
    edit: ["replicas: 0", "replicas: 0\n  minReadySeconds: 3"],
  },
  "job.batch/pi": {
    yaml: (ns) => `apiVersion: batch/v1
kind: Job
metadata:
  name: pi
  namespace: ${ns}
spec:
  suspend: true
  backoffLimit: 4
  template:
    spec:
      restartPolicy: Never
      containers:
${container("pi")}
`,
    edit: ["backoffLimit: 4", "backoffLimit: 5"],
  },
  "cronjob.batch/hello": {
    yaml: (ns) => `apiVersion: batch/v1
kind: CronJob
metadata:
  name: hello
  namespace: ${ns}
spec:
  schedule: "0 0 1 1 *"
  suspend: true
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: hello
            image: edgeplane/busybox:1
            command: ["sleep", "3600"]
`,
    edit: ['schedule: "0 0 1 1 *"', 'schedule: "0 0 2 1 *"'],
  },
  "service/web": {
    yaml: (ns) => `apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: ${ns}
spec:
  type: NodePort
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
`,
    edit: ["targetPort: 8080", "targetPort: 8081"],
  },
  "configmap/settings": {
    yaml: (ns) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: ${ns}
data:
  color: blue
`,
    edit: ["color: blue", "color: green"],
  },
};

/** Managers that own anything under spec, data or template fields (the migrated object's writers). */
function ownersOfContent(obj: any): string[] {
  return (obj.metadata.managedFields ?? [])
    .filter((e: any) => Object.keys(e.fieldsV1 ?? {}).some((f) => f !== "f:metadata" && f !== "f:status"))
    .map((e: any) => `${e.manager}/${e.operation}`);
}

/** More built-in kinds in one file, each with what the server adds on create or defaults. */
const MANY = (ns: string, suffix: string) => `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds, namespace: ${ns}}
spec:
  selector: {matchLabels: {app: ds}}
  template:
    metadata: {labels: {app: ds}}
    spec:
      nodeSelector: {no-such-node: "true"}
      containers:
      - name: c
        image: edgeplane/busybox:1
        ports: [{containerPort: 53, protocol: UDP}]
        env: [{name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}]
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs, namespace: ${ns}}
spec:
  replicas: 0
  selector: {matchLabels: {app: rs}}
  template:
    metadata: {labels: {app: rs}}
    spec:
      containers: [{name: c, image: edgeplane/busybox:1}]
---
apiVersion: v1
kind: Pod
metadata: {name: pod, namespace: ${ns}}
spec:
  nodeName: no-such-node
  containers:
  - name: c
    image: edgeplane/busybox:1
    env: [{name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: claim, namespace: ${ns}}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Secret
metadata: {name: secret, namespace: ${ns}}
stringData: {password: hunter2}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: sa, namespace: ${ns}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ing, namespace: ${ns}}
spec:
  defaultBackend: {service: {name: web, port: {number: 80}}}
  rules:
  - host: a.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np, namespace: ${ns}}
spec:
  podSelector: {}
  policyTypes: [Ingress]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader, namespace: ${ns}}
rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader, namespace: ${ns}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects: [{kind: ServiceAccount, name: sa, namespace: ${ns}}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: hpa, namespace: ${ns}}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: ReplicaSet, name: rs}
  minReplicas: 1
  maxReplicas: 3
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: pdb, namespace: ${ns}}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: rs}}
---
apiVersion: v1
kind: LimitRange
metadata: {name: lr, namespace: ${ns}}
spec:
  limits: [{type: Container, default: {cpu: 200m}}]
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: rq, namespace: ${ns}}
spec:
  hard: {pods: "50"}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: migration-${suffix}}
value: 1000
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: migration-${suffix}}
aggregationRule:
  clusterRoleSelectors: [{matchLabels: {aggregate-to-migration-${suffix}: "true"}}]
`;

describe.skipIf(!hasKubectl)("kubectl apply, then apply --server-side, then diff --server-side", () => {
  for (const [name, m] of Object.entries(MANIFESTS)) {
    it(`${name}: no conflict, no warning, and client-side apply still works after`, async () => {
      const ns = await freshNamespace(t, "mig");
      const file = join(tmp, `${ns}.yaml`);
      writeFileSync(file, m.yaml(ns));

      const csa = await k(["apply", "-f", file]);
      expect(csa.stderr).toBe("");
      expect(csa.stdout.trim()).toBe(`${name} created`);

      const ssa = await k(["apply", "--server-side", "-f", file]);
      expect(ssa.stderr).toBe("");
      expect(ssa.code).toBe(0);
      expect(ssa.stdout.trim()).toBe(`${name} serverside-applied`);

      const diff = await k(["diff", "--server-side", "-f", file]);
      expect(diff.stderr).toBe("");
      expect(diff.stdout).toBe("");
      expect(diff.code).toBe(0);

      // migrated: the content is kubectl's by Apply, none of it left with the client-side manager
      const live = JSON.parse(
        (await k(["get", name, "-n", ns, "-o", "json", "--show-managed-fields"])).stdout,
      );
      expect(ownersOfContent(live)).toEqual(["kubectl/Apply"]);
      if (name.startsWith("job")) {
        // the selector and template labels the server generated are nobody's
        const kubectlSet = live.metadata.managedFields.find((e: any) => e.manager === "kubectl").fieldsV1;
        expect(kubectlSet["f:spec"]["f:selector"]).toBeUndefined();
        expect(kubectlSet["f:spec"]["f:template"]?.["f:metadata"]).toBeUndefined();
        expect(live.spec.selector.matchLabels["batch.kubernetes.io/controller-uid"]).toBe(live.metadata.uid);
      }

      // a second server-side apply is a no-op, and so is its diff
      const again = await k(["apply", "--server-side", "-f", file]);
      expect(again.stderr).toBe("");
      expect(again.code).toBe(0);

      // back to client-side apply with an edit: applied, without a warning
      writeFileSync(file, m.yaml(ns).replace(m.edit[0], m.edit[1]));
      const back = await k(["apply", "-f", file]);
      expect(back.stderr).toBe("");
      expect(back.code).toBe(0);
      expect(back.stdout.trim()).toBe(`${name} configured`);
      const edited = await k(["diff", "-f", file]);
      expect(edited.stdout).toBe("");
      expect(edited.code).toBe(0);
    });
  }

  it("sixteen more built-in kinds in one file", async () => {
    const ns = await freshNamespace(t, "mig");
    const file = join(tmp, `${ns}-many.yaml`);
    writeFileSync(file, MANY(ns, ns));
    try {
      const csa = await k(["apply", "-f", file]);
      expect(csa.stderr).toBe("");
      expect(csa.stdout.trim().split("\n")).toHaveLength(16);
      const ssa = await k(["apply", "--server-side", "-f", file]);
      expect(ssa.stderr).toBe("");
      expect(ssa.stdout.match(/serverside-applied/g)).toHaveLength(16);
      const diff = await k(["diff", "--server-side", "-f", file]);
      expect(diff.stderr).toBe("");
      expect(diff.stdout).toBe("");
      expect(diff.code).toBe(0);
      const back = await k(["apply", "-f", file]);
      expect(back.stderr).toBe("");
      expect(back.code).toBe(0);
    } finally {
      await k(["delete", "priorityclass,clusterrole", `migration-${ns}`, "--ignore-not-found"]);
    }
  });
});
