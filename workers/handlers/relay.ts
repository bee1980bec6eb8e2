// The local front door's side door into the store shards' relays (durable-objects/store/
// relay.ts). The front door proves itself with the secret it shares with this Worker (the
// EDGEPLANE_RELAY_SECRET binding, made afresh by the local engine at each start; unset on
// Cloudflare, where there is no front door and these requests are ordinary, unauthenticated
// ones). A relay carries the events of watches each client opened and was authorized for as
// usual; the secret only lets the front door choose how they travel.
import { lookupKey } from "../../api/registry";
import type { Env } from "../../durable-objects/env";
import { Store } from "../../durable-objects/store/client";
import { RELAY_NO_HEADER, RELAY_SHARD_HEADER, RELAY_WATCH_HEADER } from "../../durable-objects/store/relay";
import { splitShardKey } from "../../durable-objects/store/shard-plan";
import { safeEqual } from "../authn/types";

/** Whether `value` opens with the relay secret: `value` is "<secret>" or "<secret> <rest>". */
function fromFrontDoor(env: Env, value: string | null | undefined): string | undefined {
  const secret = env.EDGEPLANE_RELAY_SECRET;
  if (!secret || !value) return undefined;
  const space = value.indexOf(" ");
  const given = space < 0 ? value : value.slice(0, space);
  return safeEqual(given, secret) ? value.slice(given.length + 1) : undefined;
}

/** The front door's id for a watch it can carry on a relay, when the request is the front door's. */
export function relayWatchId(env: Env, req: Request): number | undefined {
  const id = fromFrontDoor(env, req.headers.get(RELAY_WATCH_HEADER));
  return id && /^\d{1,10}$/.test(id) && Number(id) <= 0xffffffff ? Number(id) : undefined;
}

/**
 * A relay request from the front door (GET opens the shard's relay, POST {no, ids} ends
 * watches whose clients left), or undefined when the request is not the front door's.
 */
export async function handleRelay(req: Request, env: Env): Promise<Response | undefined> {
  if (fromFrontDoor(env, req.headers.get(RELAY_WATCH_HEADER)) === undefined) return undefined;
  // a resource spread over shards names its shard after its key (store/shard-plan.ts)
  const { key, shard } = splitShardKey(req.headers.get(RELAY_SHARD_HEADER) ?? "");
  let store: Store;
  try {
    store = new Store(env, lookupKey(key));
  } catch {
    return new Response(null, { status: 404 });
  }
  if (shard >= store.plan.count) return new Response(null, { status: 404 });
  if (req.method === "GET") return store.openRelay(req.headers.get(RELAY_NO_HEADER) ?? "", shard);
  if (req.method !== "POST") return new Response(null, { status: 405 });
  let body: { no?: unknown; ids?: unknown };
  try {
    body = await req.json();
  } catch {
    return new Response(null, { status: 400 });
  }
  if (typeof body?.no !== "string" || !Array.isArray(body.ids)) return new Response(null, { status: 400 });
  await store.cancelRelayed(body.no, body.ids.map(Number), shard);
  return new Response(null, { status: 204 });
}
