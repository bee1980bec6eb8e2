// The CPU manager's static policy: a Guaranteed pod's container with an
// integer CPU request gets exclusive CPUs (UpdateContainerResources with a
// cpuset); everything else shares the rest of the CPUs.

import { milliCPU } from "../../api/quantity";
import type { CriClient } from "../cri/client";
import type { Pod, PodContainer } from "../lib/kube-types";
import { computeQOSClass } from "./qos";

export class StaticCpuManager {
  private readonly assigned = new Map<string, number[]>();

  constructor(
    private readonly cri: CriClient,
    private readonly cpus: number,
    /** CPUs never handed out exclusively (the kubelet's reserved set). */
    private readonly reserved: number[] = [0],
    private readonly log: (m: string) => void = () => {},
  ) {}

  private free(): number[] {
    const used = new Set([...this.reserved, ...[...this.assigned.values()].flat()]);
    return Array.from({ length: this.cpus }, (_, i) => i).filter((i) => !used.has(i));
  }

  /** The exclusive CPU count a container asks for (0 when it shares). */
  static exclusiveCount(pod: Pod, container: PodContainer): number {
    if (computeQOSClass(pod) !== "Guaranteed") return 0;
    const m = milliCPU(container.resources?.requests?.cpu ?? container.resources?.limits?.cpu);
    return m > 0 && m % 1000 === 0 ? m / 1000 : 0;
  }

  async onContainerCreated(pod: Pod, container: PodContainer, containerId: string): Promise<void> {
    const n = StaticCpuManager.exclusiveCount(pod, container);
    const key = `${pod.metadata.uid}/${container.name}`;
    let set = this.assigned.get(key);
    if (n > 0 && !set) {
      const free = this.free();
      if (free.length >= n) {
        set = free.slice(0, n);
        this.assigned.set(key, set);
      }
    }
    const cpus =
      set ??
      this.free()
        .concat(this.reserved)
        .sort((a, b) => a - b);
    if (!cpus.length) return;
    try {
      await this.cri.updateContainerResources(containerId, { cpuset_cpus: cpus.join(",") });
    } catch (e) {
      this.log(`cpuset for ${key}: ${(e as Error).message}`);
    }
  }

  release(uid: string): void {
    for (const k of this.assigned.keys()) if (k.startsWith(`${uid}/`)) this.assigned.delete(k);
  }
}
