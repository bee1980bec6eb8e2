// The ledger of allocated values (a Service's cluster IP and node ports) inside a store
// shard: which object holds which key, built from the stored objects on first use and kept
// current by every commit. The shard is single threaded, so a check and the commit after it
// cannot interleave with another write.
import { invalid } from "../../api/errors";
import type { Allocator, ResourceDef } from "../../api/resource";
import type { KubeObject } from "../../api/types";

const objectKey = (obj: KubeObject) => `${obj.metadata.namespace ?? ""}/${obj.metadata.name}`;

export class Allocations {
  /** key -> the object holding it; undefined until first needed */
  private owner?: Map<string, string>;
  private byObject = new Map<string, string[]>();

  constructor(
    private readonly def: ResourceDef,
    private readonly allocator: Allocator,
    private readonly env: Record<string, string | undefined>,
    /** every stored object, read once to build the ledger */
    private readonly stored: () => Iterable<string>,
  ) {}

  private ledger(): Map<string, string> {
    if (!this.owner) {
      this.owner = new Map();
      for (const data of this.stored()) this.hold(JSON.parse(data) as KubeObject);
    }
    return this.owner;
  }

  /** Fills in and checks the object's allocated values; 422 when one cannot be had. */
  allocate(obj: KubeObject, old: KubeObject | undefined): void {
    const owner = this.ledger();
    const self = objectKey(obj);
    const causes = this.allocator.allocate(obj, old, {
      taken: (key) => {
        const o = owner.get(key);
        return o !== undefined && o !== self;
      },
      env: this.env,
    });
    if (causes.length)
      throw invalid({ group: this.def.group, kind: this.def.kind }, obj.metadata.name ?? "", causes);
  }

  /** After a commit: the object now holds what it stores (nothing once deleted). */
  record(obj: KubeObject, deleted: boolean): void {
    if (!this.owner) return;
    this.release(objectKey(obj));
    if (!deleted) this.hold(obj);
  }

  /** Drops the ledger; the next check builds it again from what is stored. */
  forget(): void {
    this.owner = undefined;
    this.byObject.clear();
  }

  private hold(obj: KubeObject): void {
    const self = objectKey(obj);
    const keys = this.allocator.held(obj, this.env);
    this.byObject.set(self, keys);
    for (const k of keys) this.owner!.set(k, self);
  }

  private release(self: string): void {
    for (const k of this.byObject.get(self) ?? []) if (this.owner!.get(k) === self) this.owner!.delete(k);
    this.byObject.delete(self);
  }
}
