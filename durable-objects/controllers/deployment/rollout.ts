// The writing half of the Deployment controller: finding or creating the new ReplicaSet,
// scaling sets (with the ScalingReplicaSet event), rollout status and history cleanup.
import { lookupGVR } from "../../../api/registry";
import { rfc3339 } from "../../../api/time";
import type { KubeObject } from "../../../api/types";
import { errorMessage, isAlreadyExists, isNotFound } from "../lib/api-errors";
import { keyOf } from "../lib/objects";
import { controllerRefOf, newControllerRef } from "../lib/owners";
import type { ControllerContext } from "../runtime/controller";
import {
  byCreation,
  computeHash,
  equalIgnoreHash,
  HASH_LABEL,
  maxRevision,
  REVISION,
  revisionOf,
} from "./revisions";
import {
  maxSurge,
  newRSNewReplicas,
  replicasOf,
  setNewReplicaSetAnnotations,
  setReplicasAnnotations,
} from "./scaling";
import {
  calculateDeploymentStatus,
  deploymentComplete,
  deploymentProgressing,
  deploymentStatusEqual,
  deploymentTimedOut,
  hasProgressDeadline,
  newCondition,
  progressRecheckAfter,
  removeDeploymentCondition,
  setDeploymentCondition,
} from "./status";

export const DEPLOY = lookupGVR("apps", "v1", "deployments")!;
export const RS = lookupGVR("apps", "v1", "replicasets")!;

/** One sync's view of a Deployment; `d` follows every write made to it. */
export class DeploymentState {
  constructor(
    readonly ctx: ControllerContext,
    public d: KubeObject,
    public rsList: KubeObject[],
  ) {}

  nowIso(): string {
    return rfc3339(this.ctx.now());
  }

  /** The new ReplicaSet (template equal to the Deployment's), oldest first among equals. */
  findNew(): KubeObject | undefined {
    const sorted = [...this.rsList].sort(byCreation);
    const equal = sorted.find((rs) => equalIgnoreHash(rs.spec?.template, this.d.spec?.template));
    if (equal) return equal;
    const name = `${this.d.metadata.name}-${computeHash(this.d.spec?.template, this.d.status?.collisionCount)}`;
    return sorted.find((rs) => rs.metadata.name === name);
  }

  oldOf(newRS: KubeObject | undefined): KubeObject[] {
    return this.rsList.filter((rs) => rs.metadata.uid !== newRS?.metadata.uid);
  }

  private replace(rs: KubeObject): void {
    const i = this.rsList.findIndex((x) => x.metadata.uid === rs.metadata.uid);
    if (i >= 0) this.rsList[i] = rs;
    else this.rsList.push(rs);
  }

  async updateStatus(status: any): Promise<void> {
    this.d = await this.ctx.api.update(DEPLOY, { ...this.d, status }, "status");
  }

  /** Sets the Deployment's revision annotation (a metadata write, not a spec change). */
  async setRevision(revision: string): Promise<void> {
    if (this.d.metadata.annotations?.[REVISION] === revision) return;
    const next = structuredClone(this.d);
    next.metadata.annotations = { ...(next.metadata.annotations ?? {}), [REVISION]: revision };
    this.d = await this.ctx.api.update(DEPLOY, next);
  }

  /** Upstream getNewReplicaSet: syncs the existing new set's annotations or creates it. */
  async newReplicaSet(create: boolean): Promise<KubeObject | undefined> {
    const d = this.d;
    const existing = this.findNew();
    const newRevision = String(maxRevision(this.oldOf(existing)) + 1);
    if (existing) {
      const copy = structuredClone(existing);
      const annotated = setNewReplicaSetAnnotations(d, copy, newRevision, true);
      const minReady = d.spec?.minReadySeconds ?? 0;
      if (annotated || (copy.spec?.minReadySeconds ?? 0) !== minReady) {
        copy.spec.minReadySeconds = minReady;
        this.replace(await this.ctx.api.update(RS, copy));
      }
      const rs = this.rsList.find((x) => x.metadata.uid === existing.metadata.uid)!;
      await this.setRevision(rs.metadata.annotations?.[REVISION] ?? newRevision);
      if (
        hasProgressDeadline(this.d) &&
        !this.d.status?.conditions?.some((c: any) => c.type === "Progressing")
      ) {
        const status = structuredClone(this.d.status ?? {});
        setDeploymentCondition(
          status,
          newCondition(
            "Progressing",
            "True",
            "FoundNewReplicaSet",
            `Found new replica set "${rs.metadata.name}"`,
            this.nowIso(),
          ),
        );
        await this.updateStatus(status);
      }
      return rs;
    }
    if (!create) return undefined;
    const template = structuredClone(d.spec?.template ?? {});
    const hash = computeHash(d.spec?.template, d.status?.collisionCount);
    template.metadata = {
      ...(template.metadata ?? {}),
      labels: { ...(template.metadata?.labels ?? {}), [HASH_LABEL]: hash },
    };
    const selector = structuredClone(d.spec?.selector ?? {});
    selector.matchLabels = { ...(selector.matchLabels ?? {}), [HASH_LABEL]: hash };
    const rs: KubeObject = {
      apiVersion: "apps/v1",
      kind: "ReplicaSet",
      metadata: {
        name: `${d.metadata.name}-${hash}`,
        namespace: d.metadata.namespace,
        labels: template.metadata.labels,
        ownerReferences: [newControllerRef(d, "apps/v1", "Deployment")],
      },
      spec: { replicas: 0, minReadySeconds: d.spec?.minReadySeconds ?? 0, selector, template },
    };
    const count = newRSNewReplicas(d, [...this.rsList, rs], rs);
    rs.spec.replicas = count;
    setNewReplicaSetAnnotations(d, rs, newRevision, false);
    let created: KubeObject;
    let alreadyExisted = false;
    try {
      created = await this.ctx.api.create(RS, rs);
    } catch (e) {
      if (isAlreadyExists(e)) {
        const found = this.ctx.informers.get("apps/replicasets", keyOf(rs));
        if (
          found &&
          controllerRefOf(found)?.uid === d.metadata.uid &&
          equalIgnoreHash(found.spec?.template, d.spec?.template)
        ) {
          created = found;
          alreadyExisted = true;
        } else {
          // a hash collision: bump the count so the next name differs (upstream collisionCount)
          const status = structuredClone(d.status ?? {});
          status.collisionCount = (status.collisionCount ?? 0) + 1;
          await this.updateStatus(status);
          throw e;
        }
      } else {
        if (hasProgressDeadline(d)) {
          const status = structuredClone(d.status ?? {});
          setDeploymentCondition(
            status,
            newCondition(
              "Progressing",
              "False",
              "ReplicaSetCreateError",
              `Failed to create new replica set "${rs.metadata.name}": ${errorMessage(e)}`,
              this.nowIso(),
            ),
          );
          await this.updateStatus(status).catch(() => undefined);
        }
        throw e;
      }
    }
    this.replace(created);
    if (!alreadyExisted && count > 0) {
      void this.ctx.recorder.event(
        this.d,
        "Normal",
        "ScalingReplicaSet",
        `Scaled up replica set ${created.metadata.name} to ${count} from 0`,
      );
    }
    await this.setRevision(newRevision);
    if (!alreadyExisted && hasProgressDeadline(this.d)) {
      const status = structuredClone(this.d.status ?? {});
      setDeploymentCondition(
        status,
        newCondition(
          "Progressing",
          "True",
          "NewReplicaSetCreated",
          `Created new replica set "${created.metadata.name}"`,
          this.nowIso(),
        ),
      );
      await this.updateStatus(status);
    }
    return created;
  }

  /** Scales one set (and refreshes its replica annotations); true when the size changed. */
  async scale(rs: KubeObject, to: number): Promise<boolean> {
    const d = this.d;
    const sizeChanges = replicasOf(rs) !== to;
    const copy = structuredClone(rs);
    const annotationsChange = setReplicasAnnotations(copy, replicasOf(d), replicasOf(d) + maxSurge(d));
    if (!sizeChanges && !annotationsChange) return false;
    copy.spec.replicas = to;
    let updated: KubeObject;
    try {
      updated = await this.ctx.api.update(RS, copy);
    } catch (e) {
      if (isNotFound(e)) return false;
      throw e;
    }
    this.replace(updated);
    if (sizeChanges) {
      const op = replicasOf(rs) < to ? "up" : "down";
      void this.ctx.recorder.event(
        d,
        "Normal",
        "ScalingReplicaSet",
        `Scaled ${op} replica set ${rs.metadata.name} to ${to} from ${replicasOf(rs)}`,
      );
    }
    return sizeChanges;
  }

  /** Writes the computed status when it differs (upstream syncDeploymentStatus). */
  async syncStatus(newRS: KubeObject | undefined): Promise<void> {
    const status = calculateDeploymentStatus(this.d, this.rsList, newRS, this.nowIso());
    if (!deploymentStatusEqual(this.d.status, status)) await this.updateStatus(status);
  }

  /** Status with the Progressing/ReplicaFailure conditions of a rollout (upstream syncRolloutStatus). */
  async syncRolloutStatus(newRS: KubeObject | undefined): Promise<void> {
    const d = this.d;
    const now = this.ctx.now();
    const status = calculateDeploymentStatus(d, this.rsList, newRS, this.nowIso());
    if (!hasProgressDeadline(d)) removeDeploymentCondition(status, "Progressing");
    const cur = status.conditions?.find((c: any) => c.type === "Progressing");
    const complete =
      (status.replicas ?? 0) === (status.updatedReplicas ?? 0) && cur?.reason === "NewReplicaSetAvailable";
    if (hasProgressDeadline(d) && !complete) {
      const name = newRS?.metadata.name;
      if (deploymentComplete(d, status)) {
        const msg = name
          ? `ReplicaSet "${name}" has successfully progressed.`
          : "Deployment has successfully progressed.";
        setDeploymentCondition(
          status,
          newCondition("Progressing", "True", "NewReplicaSetAvailable", msg, this.nowIso()),
        );
      } else if (deploymentProgressing(d, status)) {
        const msg = name ? `ReplicaSet "${name}" is progressing.` : "Deployment is progressing.";
        let c = newCondition("Progressing", "True", "ReplicaSetUpdated", msg, this.nowIso());
        if (cur) {
          if (cur.status === "True") c = { ...c, lastTransitionTime: cur.lastTransitionTime };
          removeDeploymentCondition(status, "Progressing");
        }
        setDeploymentCondition(status, c);
      } else if (deploymentTimedOut(d, status, now)) {
        const msg = name
          ? `ReplicaSet "${name}" has timed out progressing.`
          : `Deployment "${d.metadata.name}" has timed out progressing.`;
        setDeploymentCondition(
          status,
          newCondition("Progressing", "False", "ProgressDeadlineExceeded", msg, this.nowIso()),
        );
      }
    }
    const failure = replicaFailure(this.rsList, newRS);
    if (failure) setDeploymentCondition(status, { ...failure });
    else removeDeploymentCondition(status, "ReplicaFailure");
    if (!deploymentStatusEqual(d.status, status)) await this.updateStatus(status);
    const after = progressRecheckAfter(this.d, status, now);
    if (after !== undefined) this.ctx.enqueue(keyOf(this.d), after);
  }

  /** Deletes the oldest unused sets beyond revisionHistoryLimit (upstream cleanupDeployment). */
  async cleanup(oldRSs: KubeObject[]): Promise<void> {
    const limit = this.d.spec?.revisionHistoryLimit;
    if (typeof limit !== "number") return;
    const alive = oldRSs.filter((rs) => !rs.metadata.deletionTimestamp);
    const diff = alive.length - limit;
    if (diff <= 0) return;
    alive.sort((a, b) => revisionOf(a) - revisionOf(b) || byCreation(a, b));
    for (const rs of alive.slice(0, diff)) {
      if ((rs.status?.replicas ?? 0) !== 0 || replicasOf(rs) !== 0) continue;
      if ((rs.metadata.generation ?? 1) > (rs.status?.observedGeneration ?? 0)) continue;
      try {
        await this.ctx.api.remove(RS, rs.metadata.namespace, rs.metadata.name!, {
          preconditions: { uid: rs.metadata.uid },
        });
      } catch (e) {
        if (!isNotFound(e)) throw e;
      }
    }
  }
}

/** The ReplicaFailure condition of the new set (or any set), as a Deployment condition. */
function replicaFailure(all: KubeObject[], newRS: KubeObject | undefined): any | undefined {
  const sets = newRS ? [newRS, ...all.filter((r) => r !== newRS)] : all;
  for (const rs of sets) {
    const c = rs.status?.conditions?.find((x: any) => x.type === "ReplicaFailure" && x.status === "True");
    if (c)
      return {
        type: "ReplicaFailure",
        status: "True",
        reason: c.reason,
        message: c.message,
        lastUpdateTime: c.lastTransitionTime,
        lastTransitionTime: c.lastTransitionTime,
      };
  }
  return undefined;
}
