// The remotecommand channel protocol kubectl speaks over WebSocket (v4/v5.channel.k8s.io):
// every binary message starts with a channel byte. 0 stdin, 1 stdout, 2 stderr, 3 error
// (a metav1.Status JSON; the exit code in details.causes[reason=ExitCode]), 4 resize
// ({"Width":w,"Height":h}); v5 adds 255 close: [255, channel] half-closes that channel.

export const STDIN = 0;
export const STDOUT = 1;
export const STDERR = 2;
export const ERROR = 3;
export const RESIZE = 4;
export const CLOSE = 255;

export function channelFrame(channel: number, data: Uint8Array | string): Buffer {
  const body = typeof data === "string" ? Buffer.from(data) : data;
  const out = Buffer.alloc(body.length + 1);
  out[0] = channel;
  out.set(body, 1);
  return out;
}

/** The error-channel Status for a finished command, as the kubelet reports it. */
export function exitStatus(exitCode: number, command: string[] = []): Record<string, unknown> {
  if (exitCode === 0) return { metadata: {}, status: "Success" };
  return {
    metadata: {},
    status: "Failure",
    message: `command terminated with non-zero exit code: error executing command [${command.join(" ")}], exit code ${exitCode}`,
    reason: "NonZeroExitCode",
    details: { causes: [{ reason: "ExitCode", message: String(exitCode) }] },
  };
}

/** An error-channel Status for a failure that is not an exit code. */
export function errorStatus(message: string): Record<string, unknown> {
  return { metadata: {}, status: "Failure", message, reason: "InternalError", code: 500 };
}

/** The exit code an error-channel Status carries (0 for Success), for tests and logs. */
export function exitCodeOf(status: {
  status?: string;
  details?: { causes?: { reason?: string; message?: string }[] };
}): number {
  if (status.status === "Success") return 0;
  const cause = status.details?.causes?.find((c) => c.reason === "ExitCode");
  return cause ? Number(cause.message) : -1;
}
