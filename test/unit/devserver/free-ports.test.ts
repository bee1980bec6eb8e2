// Starting on ports probed free: a port taken before the server binds it costs a retry on
// other ports, not a failed start (the engine, and the benchmark's etcd, both start this way).
import net from "node:net";
import { describe, expect, it } from "vitest";
import { freePort, onFreePorts } from "../../../local-engine/devserver";

/** Listens on a port from freePort, which `taken` (a listener) may hold already. */
async function listenOnProbedPort(taken?: net.Server): Promise<net.Server> {
  const port = taken ? (taken.address() as net.AddressInfo).port : await freePort();
  const s = net.createServer();
  await new Promise<void>((res, rej) => {
    s.once("error", rej);
    s.listen(port, "127.0.0.1", () => res());
  });
  return s;
}

describe("starting on free ports", () => {
  it("starts again when the probed port was taken, and gives up after three tries", async () => {
    const squatter = await listenOnProbedPort();
    let calls = 0;
    const started = await onFreePorts(() => listenOnProbedPort(++calls === 1 ? squatter : undefined));
    expect(calls).toBe(2);
    started.close();

    calls = 0;
    await expect(
      onFreePorts(() => {
        calls++;
        return listenOnProbedPort(squatter);
      }),
    ).rejects.toThrow(/EADDRINUSE/);
    expect(calls).toBe(3);
    squatter.close();
  });

  it("does not retry any other failure", async () => {
    let calls = 0;
    await expect(
      onFreePorts(async () => {
        calls++;
        throw new Error("the engine exited early: SyntaxError");
      }),
    ).rejects.toThrow(/SyntaxError/);
    expect(calls).toBe(1);
  });
});
