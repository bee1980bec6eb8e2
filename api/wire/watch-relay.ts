// The names and numbers of the watch relay's protocol, in one place for both of its ends:
// the shard's side (relay.ts, in the Worker's bundle) and the front door's
// (local-engine/watch-relay.ts).
//
// A message, little-endian: u32 length of what follows, u8 kind (DATA or END), u32 count,
// count u32 watch ids (the front door's), then for DATA the bytes to write to each of them.

/** Request header of a watch the front door can take over: "<secret> <watch id>". */
export const RELAY_WATCH_HEADER = "x-edgeplane-relay";
/** Response header of a watch whose events go out on relay "<no>" (and an empty body). */
export const RELAYED_HEADER = "x-edgeplane-relayed";
/** Response header of a watch served as a stream of its own: open a relay to shard "<key>". */
export const RELAY_OFFER_HEADER = "x-edgeplane-relay-offer";
/** Request headers of a relay's opening: the front door's number for it, and the shard's key. */
export const RELAY_NO_HEADER = "x-edgeplane-relay-no";
export const RELAY_SHARD_HEADER = "x-edgeplane-relay-shard";
/** Where the front door opens a relay (GET) and gives up watches whose clients left (POST). */
export const RELAY_PATH = "/__edgeplane/relay";

/** A message's kind: bytes for the watches it names, or the end of those watches. */
export const DATA = 1;
export const END = 2;
