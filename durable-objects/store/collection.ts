// deletecollection in a store shard: what a list selects, deleted a slice at a time. Each
// slice's deletions are committed before the next, with a timer between slices, so other
// requests run in between (10,000 pods in one go held workerd's one thread for ~2 s). As
// upstream's, a deletion of a collection is not one transaction: a write may land between
// slices, and an object gone meanwhile is left out of the answer.
import { StatusError } from "../../api/errors";
import { apiVersionOf, type ResourceDef } from "../../api/resource";
import { fail, ok } from "./encoding";
import { planList, readList } from "./list";
import type { Answer, ListQuery, Reply } from "./protocol";
import type { StoreShard } from "./shard";

/** Deletions committed together before the next are made. */
const SLICE = 250;

/** What the shard lends a collection's deletion. */
export interface CollectionWriter {
  /** Deletes one object as a single delete would (staged); throws its Status. */
  remove(namespace: string, name: string): Answer;
  /** Runs a write and answers once what it staged is committed. */
  commit(write: () => Reply): Promise<Reply>;
  /** The revision of the newest change. */
  revision(): number;
}

/** The body is the list of what was deleted. */
export async function deleteCollection(
  shard: StoreShard,
  def: ResourceDef,
  q: ListQuery,
  w: CollectionWriter,
): Promise<Reply> {
  // only where each object is (not its data): each is read again as it is deleted
  const picked: { namespace: string; name: string }[] = [];
  try {
    const plan = planList(shard, def, { ...q, table: undefined, limit: undefined });
    plan.keysOnly = true;
    readList(shard, plan, (_data, at) => picked.push({ namespace: at.namespace, name: at.name }));
  } catch (e) {
    return fail(e);
  }
  const items: string[] = [];
  for (let i = 0; i < picked.length; i += SLICE) {
    const reply = await w.commit(() => {
      for (const item of picked.slice(i, i + SLICE)) {
        try {
          items.push(w.remove(item.namespace, item.name).body);
        } catch (e) {
          // one whose preconditions fail (or that went meanwhile) is left out
          if (!(e instanceof StatusError)) throw e;
        }
      }
      return ok("");
    });
    if (!reply.ok) return reply;
    // a timer, not a zero delay: workerd runs ready continuations before it reads requests
    await new Promise((r) => setTimeout(r, 1));
  }
  const meta = `{"resourceVersion":"${w.revision()}"}`;
  return ok(
    `{"kind":"${def.listKind}","apiVersion":"${apiVersionOf(def)}","metadata":${meta},"items":[${items.join(",")}]}`,
  );
}
