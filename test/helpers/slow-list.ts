// A list read as a slow client reads it: the first part, then (after the test has changed
// things) the rest. The lists are made of ~900 KB ConfigMaps, so that ~27 MB is more than
// the sockets and pipes between a store shard and the reader hold, and later pages are still
// unread in the shard while the test writes.
import { api, type Target } from "./cluster";

/** A ConfigMap `name` holding 900,000 copies of `fill`. */
export function bigConfigMap(name: string, fill: string) {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name }, data: { fill: fill.repeat(900_000) } };
}

/** Creates bigConfigMap `names(i)` for i < count, filled with "a", a few at a time. */
export async function createBig(t: Target, path: string, count: number, names: (i: number) => string) {
  for (let i = 0; i < count; i += 6)
    await Promise.all(
      Array.from({ length: Math.min(6, count - i) }, async (_, k) => {
        const r = await api(t, "POST", path, bigConfigMap(names(i + k), "a"));
        if (r.status !== 201) throw new Error(`create ${names(i + k)}: ${r.status} ${r.text.slice(0, 200)}`);
      }),
    );
}

/** Opens the list at `path` as JSON and reads its first ~1 MB; `rest()` reads the remainder. */
export async function openSlowList(t: Target, path: string): Promise<{ rest(): Promise<any> }> {
  const res = await fetch(`${t.url}${path}`, {
    headers: { authorization: `Bearer ${t.token}`, accept: "application/json" },
  });
  if (res.status !== 200) throw new Error(`list ${path}: ${res.status} ${await res.text()}`);
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let text = "";
  const read = async (until: number) => {
    while (text.length < until) {
      const { done, value } = await reader.read();
      if (done) break;
      text += dec.decode(value, { stream: true });
    }
  };
  await read(1_000_000);
  return {
    async rest() {
      await read(Number.POSITIVE_INFINITY);
      return JSON.parse(text);
    },
  };
}
