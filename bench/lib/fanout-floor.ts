// The floor under watch delivery on this machine: the same watchers, client and event bytes
// as the apiserver's watch rows, but the events come from a bare Node server that writes
// each one to every connection (fanout-server.mjs). Whatever the apiserver adds (the create,
// its commit, the shard's fan-out, the front door's relay) is the difference from these rows.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { expectStatus, keepAliveAgent, openLineStream, request, type Target } from "./http";
import { nameWithPrefix } from "./pods";
import { measureWatchLatency, type WatchResult } from "./watch-latency";

async function startServer(): Promise<{ target: Target; child: ChildProcess }> {
  const script = fileURLToPath(new URL("./fanout-server.mjs", import.meta.url));
  const child = spawn(process.execPath, [script], { stdio: ["ignore", "pipe", "inherit"] });
  const [first] = (await once(child.stdout!, "data")) as [Buffer];
  return { target: { host: "127.0.0.1", port: Number(first.toString().trim()) }, child };
}

/**
 * Watch delivery from the bare server, for each watcher count. `eventFor(id)` is the line
 * an apiserver watch would carry for the object named `id` (the same bytes, so the same
 * copying).
 */
export async function runFanoutFloor(opts: {
  watches: { watchers: number; events: number; seconds?: number }[];
  eventFor: (id: string) => string;
  log: (s: string) => void;
}): Promise<WatchResult[]> {
  const { target, child } = await startServer();
  const writer = keepAliveAgent(1);
  const out: WatchResult[] = [];
  try {
    for (const { watchers, events, seconds } of opts.watches) {
      opts.log(`floor: watch delivery from a bare Node server, ${watchers} watcher(s) x ${events} events`);
      const prefix = `fw${watchers}`;
      out.push(
        await measureWatchLatency(
          {
            open: (_i, deliver) =>
              openLineStream(target, "GET", "/watch", undefined, (line, at) => {
                const name = nameWithPrefix(line, prefix);
                if (name) deliver(name, at);
              }),
            fire: async (id) => {
              await expectStatus(
                201,
                request(target, writer, "POST", "/fire", opts.eventFor(id)),
                "floor fire",
              );
            },
          },
          { watchers, events, prefix, maxSeconds: seconds },
        ),
      );
    }
  } finally {
    writer.destroy();
    child.kill();
  }
  return out;
}
