// The node's heartbeat: a coordination.k8s.io Lease in kube-node-lease renewed
// every few seconds (leaseDurationSeconds 40), owned by the Node.

import { microTime } from "../../api/time";
import type { Lease } from "../lib/kube-types";
import { type Api, enc, errorText } from "./api";

export const LEASE_NAMESPACE = "kube-node-lease";
export const LEASE_DURATION_SECONDS = 40;

export class LeaseKeeper {
  private lease: Lease | undefined;

  constructor(
    private readonly api: Api,
    private readonly nodeName: string,
    private readonly nodeUID: string | undefined,
  ) {}

  private path(name = ""): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${LEASE_NAMESPACE}/leases${name ? `/${enc(name)}` : ""}`;
  }

  private fresh(): Lease {
    return {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: {
        name: this.nodeName,
        namespace: LEASE_NAMESPACE,
        ...(this.nodeUID
          ? { ownerReferences: [{ apiVersion: "v1", kind: "Node", name: this.nodeName, uid: this.nodeUID }] }
          : {}),
      },
      spec: {
        holderIdentity: this.nodeName,
        leaseDurationSeconds: LEASE_DURATION_SECONDS,
        renewTime: microTime(),
      },
    };
  }

  /** Renews (or creates) the lease once. Throws with the server's answer on failure. */
  async renew(attempt = 0): Promise<void> {
    if (!this.lease) {
      const got = await this.api.get(this.path(this.nodeName));
      // each answer stored below is the Lease itself (a GET, create or update of it)
      if (got.status === 200) this.lease = got.json as Lease;
      else if (got.status === 404) {
        let r = await this.api.request("POST", this.path(), this.fresh());
        if (r.status === 404) {
          await this.api.request("POST", "/api/v1/namespaces", {
            apiVersion: "v1",
            kind: "Namespace",
            metadata: { name: LEASE_NAMESPACE },
          });
          r = await this.api.request("POST", this.path(), this.fresh());
        }
        if (r.status !== 201 && r.status !== 200) throw new Error(`create lease: ${errorText(r)}`);
        this.lease = r.json as Lease;
        return;
      } else throw new Error(`get lease: ${errorText(got)}`);
    }
    const next = {
      ...this.lease,
      spec: {
        ...this.lease.spec,
        holderIdentity: this.nodeName,
        leaseDurationSeconds: LEASE_DURATION_SECONDS,
        renewTime: microTime(),
      },
    };
    const r = await this.api.request("PUT", this.path(this.nodeName), next);
    if (r.status === 200) {
      this.lease = r.json as Lease;
      return;
    }
    this.lease = undefined; // conflict or gone: re-read next time
    if ((r.status === 409 || r.status === 404) && attempt < 3) return this.renew(attempt + 1);
    throw new Error(`renew lease: ${errorText(r)}`);
  }
}
