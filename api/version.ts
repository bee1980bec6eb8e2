// What /version serves: the Kubernetes version this apiserver speaks (kubectl and client-go
// read major/minor as strings; components build their user agents from it).
export interface VersionOptions {
  gitVersion?: string;
  gitCommit?: string;
  buildDate?: string;
  platform?: string;
}

export function versionBody(opts: VersionOptions = {}): Record<string, string> {
  return {
    major: "1",
    minor: "32",
    gitVersion: opts.gitVersion ?? "v1.32.0-edgeplane",
    gitCommit: opts.gitCommit ?? "0000000000000000000000000000000000000000",
    gitTreeState: "clean",
    buildDate: opts.buildDate ?? "2026-01-01T00:00:00Z",
    goVersion: "go1.23.0",
    compiler: "gc",
    platform: opts.platform ?? "linux/amd64",
  };
}
