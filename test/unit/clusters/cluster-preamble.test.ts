// The line a node's relay sends before a pod's connection to the `kubernetes` Service, and how
// the front door puts that connection's requests under the cluster's path.
import { describe, expect, it } from "vitest";
import { clusterOfServer, clusterPreamble, readClusterPreamble } from "../../../api/wire/cluster-preamble";
import { requestUnderCluster, underCluster } from "../../../local-engine/cluster-connections";

describe("cluster preamble", () => {
  it("names the cluster of a --server URL, none for the root", () => {
    expect(clusterOfServer("https://127.0.0.1:8443/clusters/team-a")).toBe("team-a");
    expect(clusterOfServer("https://127.0.0.1:8443/clusters/team-a/")).toBe("team-a");
    expect(clusterOfServer("https://127.0.0.1:8443")).toBeUndefined();
    expect(clusterOfServer("https://127.0.0.1:8443/clusters/Team_A")).toBeUndefined();
    expect(clusterOfServer("https://127.0.0.1:8443/clusters/a/b")).toBeUndefined();
  });

  it("reads a whole line, waits for a partial one, refuses a malformed one", () => {
    const line = clusterPreamble("team-a");
    const tls = "\x16\x03\x01";
    expect(readClusterPreamble(line + tls)).toEqual({ cluster: "team-a", length: line.length });
    expect(readClusterPreamble(line.slice(0, 5))).toBe("partial");
    expect(readClusterPreamble(line.slice(0, -1))).toBe("partial");
    expect(readClusterPreamble(tls)).toBe("none");
    expect(readClusterPreamble("GET / HTTP/1.1\r\n")).toBe("none");
    expect(readClusterPreamble("EDGEPLANE-CLUSTER ../root\r\n")).toBe("bad");
    expect(readClusterPreamble("EDGEPLANE-CLUSTER \r\n")).toBe("bad");
    expect(readClusterPreamble(`EDGEPLANE-CLUSTER ${"a".repeat(200)}`)).toBe("bad");
    expect(() => clusterPreamble("a/b")).toThrow();
  });

  it("puts origin-form targets under the cluster's path, HTTP/1.1 and HTTP/2 alike", () => {
    const head = "GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\n\r\n";
    const body = "tail";
    const chunk = Buffer.from(head + body);
    const out = requestUnderCluster(chunk, head.length, "/clusters/a");
    expect(out.chunk.toString()).toBe(`GET /clusters/a/api/v1/namespaces HTTP/1.1\r\nHost: x\r\n\r\n${body}`);
    expect(out.chunk.subarray(out.end).toString()).toBe(body);
    expect(requestUnderCluster(chunk, head.length, undefined).chunk).toBe(chunk);
    const star = Buffer.from("OPTIONS * HTTP/1.1\r\n\r\n");
    expect(requestUnderCluster(star, star.length, "/clusters/a").chunk).toBe(star);
    expect(underCluster("/version", "/clusters/a")).toBe("/clusters/a/version");
    expect(underCluster("/version", undefined)).toBe("/version");
  });
});
