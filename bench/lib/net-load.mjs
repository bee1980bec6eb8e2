// The traffic of the networking bench, as one plain Node program (run unchanged on the machine
// and inside pods, where it is started with chroot into the host's filesystem so that the pod's
// own network namespace carries it):
//   node net-load.mjs server <port>
//     GET /ping -> "pong"; GET /bulk?bytes=N -> N bytes
//   node net-load.mjs client <base URL> <requests> <concurrency> <seconds> <bulk bytes>
//     prints one JSON line: sequential request latencies (keep-alive), requests/s with
//     <concurrency> connections for <seconds>, and the bulk download's MB/s
import { Agent, createServer, request } from "node:http";

const [mode, ...args] = process.argv.slice(2);

if (mode === "server") {
  const chunk = Buffer.alloc(64 * 1024, 120);
  const srv = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (url.pathname === "/bulk") {
      let left = Number(url.searchParams.get("bytes") ?? 0);
      res.writeHead(200, { "content-length": String(left) });
      const more = () => {
        while (left > 0) {
          const n = Math.min(left, chunk.length);
          left -= n;
          if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return res.once("drain", more);
        }
        res.end();
      };
      return more();
    }
    res.end("pong");
  });
  srv.keepAliveTimeout = 60_000;
  srv.listen(Number(args[0] ?? 8080), "0.0.0.0", () => console.log("listening"));
  process.on("SIGTERM", () => process.exit(0));
} else if (mode === "client") {
  const [base, nReq, conc, secs, bulk] = args;
  const agent = new Agent({ keepAlive: true, maxSockets: Number(conc ?? 8) });
  const get = (path) =>
    new Promise((resolve, reject) => {
      const req = request(`${base}${path}`, { agent }, (res) => {
        let bytes = 0;
        res.on("data", (d) => (bytes += d.length));
        res.on("end", () => resolve(bytes));
        res.on("error", reject);
      });
      req.on("error", reject);
      req.setTimeout(10_000, () => req.destroy(new Error("timeout")));
      req.end();
    });
  for (let i = 0; i < 50; i++) await get("/ping"); // warm: connections, JIT
  const lat = [];
  for (let i = 0; i < Number(nReq ?? 2000); i++) {
    const t = process.hrtime.bigint();
    await get("/ping");
    lat.push(Number(process.hrtime.bigint() - t) / 1e3);
  }
  lat.sort((a, b) => a - b);
  const pct = (p) => lat[Math.min(lat.length - 1, Math.ceil((p / 100) * lat.length) - 1)];
  let done = 0;
  const until = Date.now() + Number(secs ?? 3) * 1000;
  const began = Date.now();
  await Promise.all(
    Array.from({ length: Number(conc ?? 8) }, async () => {
      while (Date.now() < until) {
        await get("/ping");
        done++;
      }
    }),
  );
  const rps = done / ((Date.now() - began) / 1000);
  const bytes = Number(bulk ?? 64 * 1024 * 1024);
  const tb = process.hrtime.bigint();
  const got = await get(`/bulk?bytes=${bytes}`);
  const bulkS = Number(process.hrtime.bigint() - tb) / 1e9;
  console.log(
    JSON.stringify({
      p50_us: pct(50),
      p99_us: pct(99),
      n: lat.length,
      rps,
      bulk_mb_s: got / 1e6 / bulkS,
      bulk_bytes: got,
    }),
  );
  agent.destroy();
} else {
  console.error(
    "usage: net-load.mjs server <port> | client <base> <requests> <concurrency> <seconds> <bulk bytes>",
  );
  process.exit(2);
}
