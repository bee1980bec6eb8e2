// The watch fan-out floor's server (bench/lib/fanout-floor.ts): a bare Node HTTP/1.1 server,
// in a process of its own as the front door is, that holds every GET as an open chunked
// stream and, for each POST, writes the POST's body as one chunk to every stream, then
// answers 201. No parsing, filtering or encoding: what is left is the cost of moving one
// event's bytes to each connection, on this machine. Prints its port on stdout.
import http from "node:http";

const streams = new Set();
const CRLF = Buffer.from("\r\n");

const server = http.createServer((req, res) => {
  if (req.method === "GET") {
    res.writeHead(200, { "content-type": "application/json", "transfer-encoding": "chunked" });
    res.flushHeaders();
    const socket = req.socket;
    socket.setNoDelay(true);
    streams.add(socket);
    socket.on("close", () => streams.delete(socket));
    return;
  }
  const parts = [];
  req.on("data", (c) => parts.push(c));
  req.on("end", () => {
    const body = Buffer.concat(parts);
    const chunk = Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, CRLF]);
    for (const socket of streams) socket.write(chunk);
    res.writeHead(201, { "content-length": "0" });
    res.end();
  });
});
server.keepAliveTimeout = 0;
server.listen(0, "127.0.0.1", () => console.log(String(server.address().port)));
