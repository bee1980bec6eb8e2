import { describe, expect, it } from "vitest";
import { channelFrame, exitCodeOf, exitStatus } from "../../../agent/tunnel/channels";
import {
  decodeFrame,
  encodeFrame,
  FRAME_CLOSE,
  FRAME_DATA,
  FRAME_OPEN,
  jsonFrame,
  payloadJson,
} from "../../../api/wire/node-tunnel";
import {
  chooseProtocol,
  containerFor,
  EXEC_PROTOCOLS,
  PORT_FORWARD_PROTOCOLS,
} from "../../../workers/handlers/streams";

describe("tunnel frames", () => {
  it("round-trips type, stream id and payload", () => {
    const f = encodeFrame(FRAME_DATA, 0xfedcba98, new Uint8Array([1, 2, 3]));
    expect([...f.subarray(0, 5)]).toEqual([FRAME_DATA, 0xfe, 0xdc, 0xba, 0x98]);
    const d = decodeFrame(f);
    expect(d?.type).toBe(FRAME_DATA);
    expect(d?.stream).toBe(0xfedcba98);
    expect([...(d?.payload ?? [])]).toEqual([1, 2, 3]);
  });

  it("decodes from an ArrayBuffer and a subarray view", () => {
    const f = jsonFrame(FRAME_OPEN, 7, { kind: "logs", pod: "p" });
    const padded = new Uint8Array(f.length + 3);
    padded.set(f, 3);
    const view = padded.subarray(3);
    expect(payloadJson(decodeFrame(view)!)).toEqual({ kind: "logs", pod: "p" });
    expect(payloadJson(decodeFrame(f.slice().buffer)!)).toEqual({ kind: "logs", pod: "p" });
  });

  it("rejects short, unknown-type and stream-0 frames", () => {
    expect(decodeFrame(new Uint8Array([FRAME_DATA, 0, 0, 0]))).toBeUndefined();
    expect(decodeFrame(new Uint8Array([9, 0, 0, 0, 1]))).toBeUndefined();
    expect(decodeFrame(encodeFrame(FRAME_CLOSE, 0))).toBeUndefined();
    expect(payloadJson(decodeFrame(encodeFrame(FRAME_CLOSE, 1))!)).toBeUndefined();
  });
});

describe("remotecommand channels", () => {
  it("prefixes the channel byte", () => {
    expect([...channelFrame(1, "hi")]).toEqual([1, 104, 105]);
  });
  it("reports exit codes as the kubelet does", () => {
    expect(exitStatus(0)).toEqual({ metadata: {}, status: "Success" });
    const s = exitStatus(3, ["sh", "-c", "exit 3"]) as any;
    expect(s.reason).toBe("NonZeroExitCode");
    expect(s.details.causes).toEqual([{ reason: "ExitCode", message: "3" }]);
    expect(exitCodeOf(s)).toBe(3);
  });
});

describe("apiserver side checks", () => {
  const pod = (containers: string[], init: string[] = []) =>
    ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "web" },
      spec: {
        containers: containers.map((name) => ({ name })),
        initContainers: init.map((name) => ({ name })),
      },
    }) as any;

  it("defaults a single container and validates a named one", () => {
    expect(containerFor(pod(["a"]), null)).toBe("a");
    expect(containerFor(pod(["a", "b"], ["i"]), "i")).toBe("i");
    expect(() => containerFor(pod(["a"]), "nope")).toThrow("container nope is not valid for pod web");
    expect(() => containerFor(pod(["a", "b"], ["i"]), null)).toThrow(
      "a container name must be specified for pod web, choose one of: [a b] or one of the init containers: [i]",
    );
  });

  it("chooses the first offered subprotocol it speaks", () => {
    expect(chooseProtocol("v4.channel.k8s.io, v5.channel.k8s.io", EXEC_PROTOCOLS)).toBe("v4.channel.k8s.io");
    expect(chooseProtocol("channel.k8s.io", EXEC_PROTOCOLS)).toBeUndefined();
    expect(chooseProtocol("SPDY/3.1+portforward.k8s.io", PORT_FORWARD_PROTOCOLS)).toBe(
      "SPDY/3.1+portforward.k8s.io",
    );
    expect(chooseProtocol(null, EXEC_PROTOCOLS)).toBeUndefined();
  });
});
