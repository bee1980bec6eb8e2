// A minimal etcd v3 gRPC client (the protocol kube-apiserver itself uses): KV.Put and the
// Watch stream only, from a small proto with etcd's own field numbers (api/etcdserverpb).

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import type { LineStream } from "./http";

const PROTO = `
syntax = "proto3";
package etcdserverpb;
service KV { rpc Put(PutRequest) returns (PutResponse); }
service Watch { rpc Watch(stream WatchRequest) returns (stream WatchResponse); }
message ResponseHeader { uint64 cluster_id = 1; uint64 member_id = 2; int64 revision = 3; uint64 raft_term = 4; }
message PutRequest { bytes key = 1; bytes value = 2; int64 lease = 3; bool prev_kv = 4; }
message PutResponse { ResponseHeader header = 1; }
message WatchCreateRequest { bytes key = 1; bytes range_end = 2; int64 start_revision = 3; }
message WatchRequest { oneof request_union { WatchCreateRequest create_request = 1; } }
message KeyValue { bytes key = 1; int64 create_revision = 2; int64 mod_revision = 3; int64 version = 4; bytes value = 5; }
message Event { int32 type = 1; KeyValue kv = 2; }
message WatchResponse { ResponseHeader header = 1; int64 watch_id = 2; bool created = 3; bool canceled = 4; string cancel_reason = 6; repeated Event events = 11; }
`;

interface PutResponse {
  header?: { revision?: string };
}
interface WatchResponse {
  created?: boolean;
  canceled?: boolean;
  cancel_reason?: string;
  events?: { kv?: { key?: Buffer } }[];
}
type Unary<Req, Res> = (req: Req, cb: (err: grpc.ServiceError | null, res: Res) => void) => void;
interface KvClient extends grpc.Client {
  Put: Unary<{ key: Buffer; value: Buffer }, PutResponse>;
}
interface WatchClient extends grpc.Client {
  Watch(): grpc.ClientDuplexStream<object, WatchResponse>;
}

let loaded: grpc.GrpcObject | undefined;
function services(): grpc.GrpcObject {
  if (loaded) return loaded;
  const dir = mkdtempSync(join(tmpdir(), "edgeplane-bench-proto-"));
  const file = join(dir, "etcd.proto");
  writeFileSync(file, PROTO);
  const def = protoLoader.loadSync(file, { keepCase: true, longs: String, defaults: false });
  rmSync(dir, { recursive: true, force: true });
  loaded = grpc.loadPackageDefinition(def).etcdserverpb as grpc.GrpcObject;
  return loaded;
}

export interface EtcdGrpc {
  put(key: string, value: Buffer): Promise<number>;
  /** Watches every key under prefix; calls onKey per event; resolves once created. */
  watchPrefix(prefix: string, onKey: (key: string, arrivedAt: number) => void): Promise<LineStream>;
  close(): void;
}

export function connectEtcdGrpc(host: string, port: number): EtcdGrpc {
  const svc = services();
  const creds = grpc.credentials.createInsecure();
  const opts = { "grpc.max_receive_message_length": 16 * 1024 * 1024 };
  const KV = svc.KV as unknown as new (addr: string, c: grpc.ChannelCredentials, o: object) => KvClient;
  const Watch = svc.Watch as unknown as new (
    addr: string,
    c: grpc.ChannelCredentials,
    o: object,
  ) => WatchClient;
  const kv = new KV(`${host}:${port}`, creds, opts);
  const watch = new Watch(`${host}:${port}`, creds, opts);
  return {
    put: (key, value) =>
      new Promise((resolve, reject) =>
        kv.Put({ key: Buffer.from(key), value }, (err, res) =>
          err ? reject(err) : resolve(Number(res.header?.revision ?? 0)),
        ),
      ),
    watchPrefix: (prefix, onKey) =>
      new Promise((resolve, reject) => {
        const end = Buffer.from(prefix);
        end[end.length - 1] = (end[end.length - 1] as number) + 1;
        const call = watch.Watch();
        const stream: LineStream = { close: () => call.cancel() };
        let created = false;
        const timer = setTimeout(() => {
          call.cancel();
          reject(new Error("etcd watch: not created within 10s"));
        }, 10000);
        call.on("data", (res: WatchResponse) => {
          const t = performance.now();
          if (res.created && !created) {
            created = true;
            clearTimeout(timer);
            resolve(stream);
          }
          if (res.canceled) reject(new Error(`etcd watch canceled: ${res.cancel_reason}`));
          for (const ev of res.events ?? []) if (ev.kv?.key) onKey(ev.kv.key.toString("utf8"), t);
        });
        call.on("error", () => undefined);
        call.write({ create_request: { key: Buffer.from(prefix), range_end: end } });
      }),
    close: () => {
      kv.close();
      watch.close();
    },
  };
}
