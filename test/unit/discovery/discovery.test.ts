import { describe, expect, it } from "vitest";
import { versionBody } from "../../../api/version";
import {
  aggregatedContentType,
  aggregatedDiscoveryBody,
  apiGroupBody,
  apiGroupListBody,
  apiResourceListBody,
  apiVersionsBody,
  negotiateDiscovery,
} from "../../../workers/discovery/discovery";
import { FIXTURE } from "./fixture";

type Entry = Record<string, unknown>;
const KUBECTL_ACCEPT =
  "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

function resources(group: string, version: string): Entry[] {
  return (apiResourceListBody(FIXTURE, group, version)?.resources ?? []) as Entry[];
}

describe("legacy discovery", () => {
  it("lists pods in /api/v1 with short names, categories and singular name", () => {
    const pods = resources("", "v1").find((r) => r.name === "pods");
    expect(pods).toMatchObject({
      kind: "Pod",
      namespaced: true,
      singularName: "pod",
      shortNames: ["po"],
      categories: ["all"],
    });
    expect(pods?.verbs).toContain("watch");
    expect(typeof pods?.storageVersionHash).toBe("string");
  });

  it("lists subresources as resource/sub entries with their kind, and a group when it differs", () => {
    const all = resources("", "v1");
    expect(all.find((r) => r.name === "pods/status")).toEqual({
      name: "pods/status",
      singularName: "",
      namespaced: true,
      kind: "Pod",
      verbs: ["get", "patch", "update"],
    });
    expect(all.find((r) => r.name === "pods/eviction")).toMatchObject({
      group: "policy",
      version: "v1",
      kind: "Eviction",
    });
    const scale = resources("apps", "v1").find((r) => r.name === "deployments/scale");
    expect(scale).toMatchObject({ group: "autoscaling", version: "v1", kind: "Scale" });
  });

  it("answers undefined for a group-version that is not served", () => {
    expect(apiResourceListBody(FIXTURE, "batch", "v1")).toBeUndefined();
    expect(apiGroupBody(FIXTURE, "batch")).toBeUndefined();
  });

  it("builds APIVersions and an APIGroupList without the core group, in upstream order", () => {
    expect(apiVersionsBody("h:1")).toMatchObject({ kind: "APIVersions", versions: ["v1"] });
    const list = apiGroupListBody(FIXTURE);
    const names = (list.groups as Entry[]).map((g) => g.name);
    expect(names).toEqual([
      "apps",
      "events.k8s.io",
      "authorization.k8s.io",
      "rbac.authorization.k8s.io",
      "coordination.k8s.io",
    ]);
    expect((list.groups as Entry[])[0].preferredVersion).toEqual({ groupVersion: "apps/v1", version: "v1" });
    expect(apiGroupBody(FIXTURE, "apps")).toMatchObject({ kind: "APIGroup", name: "apps" });
  });
});

describe("aggregated discovery", () => {
  it("negotiates v2 from kubectl's Accept header and names it in the content type", () => {
    const n = negotiateDiscovery(KUBECTL_ACCEPT);
    expect(n).toEqual({
      kind: "aggregated",
      version: "v2",
      contentType: "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    });
  });

  it("honours v2beta1, q values, and falls back to legacy JSON", () => {
    expect(
      negotiateDiscovery("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"),
    ).toMatchObject({
      kind: "aggregated",
      version: "v2beta1",
    });
    expect(
      negotiateDiscovery(
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0.5,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
      ),
    ).toMatchObject({ version: "v2beta1" });
    expect(negotiateDiscovery("application/json")).toEqual({
      kind: "legacy",
      contentType: "application/json",
    });
    expect(negotiateDiscovery(undefined).kind).toBe("legacy");
    expect(negotiateDiscovery("application/json, */*").kind).toBe("legacy");
    expect(
      negotiateDiscovery("application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList").kind,
    ).toBe("notAcceptable");
    expect(negotiateDiscovery("application/vnd.kubernetes.protobuf").kind).toBe("notAcceptable");
    expect(aggregatedContentType("v2beta1")).toBe(
      "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
    );
  });

  it("builds the /apis list with resources, scopes and cross-group subresources", () => {
    const body = aggregatedDiscoveryBody(FIXTURE, false);
    expect(body).toMatchObject({ kind: "APIGroupDiscoveryList", apiVersion: "apidiscovery.k8s.io/v2" });
    const items = body.items as {
      metadata: Entry;
      versions: { version: string; freshness: string; resources: Entry[] }[];
    }[];
    const apps = items.find((i) => i.metadata.name === "apps");
    const deploy = apps?.versions[0].resources.find((r) => r.resource === "deployments");
    expect(apps?.versions[0]).toMatchObject({ version: "v1", freshness: "Current" });
    expect(deploy).toMatchObject({
      responseKind: { group: "apps", version: "v1", kind: "Deployment" },
      scope: "Namespaced",
      singularResource: "deployment",
      shortNames: ["deploy"],
      categories: ["all"],
    });
    expect(deploy?.subresources).toContainEqual({
      subresource: "scale",
      responseKind: { group: "autoscaling", version: "v1", kind: "Scale" },
      verbs: ["get", "patch", "update"],
    });
    const cr = items.find((i) => i.metadata.name === "rbac.authorization.k8s.io")?.versions[0].resources[0];
    expect(cr?.scope).toBe("Cluster");
  });

  it("builds the /api list as one unnamed core group", () => {
    const body = aggregatedDiscoveryBody(FIXTURE, true, "v2beta1");
    expect(body.apiVersion).toBe("apidiscovery.k8s.io/v2beta1");
    const items = body.items as { metadata: Entry; versions: { version: string; resources: Entry[] }[] }[];
    expect(items).toHaveLength(1);
    expect(items[0].metadata.name).toBeUndefined();
    expect(items[0].versions[0].version).toBe("v1");
    expect(items[0].versions[0].resources.map((r) => r.resource)).toContain("pods");
  });
});

describe("/version", () => {
  it("has integer major and minor strings and a v1.32 gitVersion", () => {
    const v = versionBody();
    expect(v.major).toBe("1");
    expect(v.minor).toBe("32");
    expect(v.gitVersion).toMatch(/^v1\.32\.\d+/);
    expect(v.platform).toBe("linux/amd64");
  });
});
