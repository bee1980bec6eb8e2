// The etcd baseline of the api-store benchmark: raw puts and watch delivery against a
// private etcd 3.4, with the same client counts and value size as the apiserver side.
// Client: gRPC (@grpc/grpc-js, what kube-apiserver itself uses) by default;
// BENCH_ETCD_CLIENT=gateway uses etcd's JSON gateway over HTTP/1.1 keep-alive instead. On
// this machine both gave the same puts/s (1 client ~700/s, 50 clients ~1,120/s, same run),
// so etcd, not the client, sets the baseline; gRPC is kept as the protocol of record.
import { type Etcd, etcdPut, etcdWatchPrefix, startEtcd } from "./etcd";
import { connectEtcdGrpc } from "./etcd-grpc";
import { keepAliveAgent, type LineStream } from "./http";
import { closedLoop, type LoadResult } from "./stats";
import { measureWatchLatency, type WatchResult } from "./watch-latency";

export interface EtcdBaseline {
  version: string;
  client: "grpc" | "gateway";
  puts: Record<number, LoadResult>;
  /** the 50-client warm-up */
  cold: LoadResult;
  watches: WatchResult[];
}

interface Ops {
  put(key: string, value: Buffer): Promise<unknown>;
  watch(prefix: string, onKey: (key: string, at: number) => void): Promise<LineStream>;
  close(): void;
}

function clientFor(etcd: Etcd, kind: "grpc" | "gateway", clients: number): Ops {
  if (kind === "grpc") {
    const g = connectEtcdGrpc(etcd.target.host, etcd.target.port);
    return { put: g.put, watch: g.watchPrefix, close: g.close };
  }
  const agent = keepAliveAgent(clients);
  return {
    put: (k, v) => etcdPut(etcd, agent, k, v),
    watch: (p, on) => etcdWatchPrefix(etcd, p, on),
    close: () => agent.destroy(),
  };
}

export async function runEtcdBaseline(opts: {
  valueBytes: number;
  puts: { clients: number; count: number }[];
  /** 50-client puts for this long before the first measured put (the apiserver side's warm-up) */
  warmUpSeconds: number;
  watches: { watchers: number; events: number; seconds?: number }[];
  log: (s: string) => void;
}): Promise<EtcdBaseline> {
  const kind = process.env.BENCH_ETCD_CLIENT === "gateway" ? "gateway" : "grpc";
  const etcd = await startEtcd();
  const value = Buffer.alloc(opts.valueBytes, "x");
  try {
    opts.log(`etcd: warm-up, ${opts.warmUpSeconds}s of puts, 50 clients`);
    const warm = clientFor(etcd, kind, 50);
    const cold = await closedLoop(
      1_000_000,
      50,
      (i) => warm.put(`/warm/${i}`, value).then(() => undefined),
      opts.warmUpSeconds,
    );
    warm.close();
    const result: EtcdBaseline = { version: etcd.version, client: kind, puts: {}, cold, watches: [] };
    for (const { clients, count } of opts.puts) {
      opts.log(`etcd: ${count} puts, ${clients} client(s)`);
      const ops = clientFor(etcd, kind, clients);
      await closedLoop(50, clients, (i) => ops.put(`/warm/${clients}/${i}`, value).then(() => undefined));
      result.puts[clients] = await closedLoop(count, clients, (i) =>
        ops.put(`/registry/pods/default/put${clients}-${i}`, value).then(() => undefined),
      );
      ops.close();
    }
    for (const { watchers, events, seconds } of opts.watches) {
      opts.log(`etcd: watch delivery, ${watchers} watcher(s) x ${events} events`);
      const ops = clientFor(etcd, kind, 1);
      const prefix = `/registry/pods/w${watchers}/`;
      result.watches.push(
        await measureWatchLatency(
          {
            open: (_i, deliver) => ops.watch(prefix, (key, at) => deliver(key.slice(prefix.length), at)),
            fire: (id) => ops.put(`${prefix}${id}`, value).then(() => undefined),
          },
          { watchers, events, prefix: `e${watchers}`, maxSeconds: seconds },
        ),
      );
      ops.close();
    }
    return result;
  } finally {
    await etcd.stop();
  }
}
