// SecurityContextDeny, Initializers and the plugin switches, as pure functions.
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../api/types";
import { enabledPlugins } from "../../../workers/admission/index";
import {
  APPLIED_ANNOTATION,
  applyInitializers,
  parseInitializers,
} from "../../../workers/admission/initializers";
import { deniedSecurityContext } from "../../../workers/admission/security-context-deny";

const pod = (spec: any): KubeObject =>
  ({ apiVersion: "v1", kind: "Pod", metadata: { name: "p" }, spec }) as KubeObject;

describe("SecurityContextDeny", () => {
  it("names the first forbidden field as upstream does", () => {
    expect(deniedSecurityContext(pod({ securityContext: { runAsUser: 1000 }, containers: [] }))).toBe(
      "pod.Spec.SecurityContext.RunAsUser is forbidden",
    );
    expect(
      deniedSecurityContext(
        pod({ securityContext: { supplementalGroups: [1], fsGroup: 2 }, containers: [] }),
      ),
    ).toBe("pod.Spec.SecurityContext.SupplementalGroups is forbidden");
    expect(deniedSecurityContext(pod({ securityContext: { fsGroup: 2 }, containers: [] }))).toBe(
      "pod.Spec.SecurityContext.FSGroup is forbidden",
    );
    expect(
      deniedSecurityContext(
        pod({ containers: [{ name: "c", securityContext: { seLinuxOptions: { level: "s0" } } }] }),
      ),
    ).toBe("SecurityContext.SELinuxOptions is forbidden");
    expect(
      deniedSecurityContext(
        pod({ initContainers: [{ name: "i", securityContext: { runAsGroup: 5 } }], containers: [] }),
      ),
    ).toBe("SecurityContext.RunAsGroup is forbidden");
    expect(
      deniedSecurityContext(pod({ securityContext: { runAsNonRoot: true }, containers: [{ name: "c" }] })),
    ).toBeUndefined();
  });
});

describe("Initializers", () => {
  const data = {
    "10-sidecar": JSON.stringify({
      name: "sidecar.example.com",
      match: { resources: ["pods"], containerPort: 80 },
      patch: {
        metadata: { annotations: { "sidecar/injected": "true" } },
        spec: { containers: [{ name: "proxy", image: "envoy" }] },
      },
    }),
    "20-broken": "{nope",
    "30-json": JSON.stringify([
      {
        match: { resources: ["pods"] },
        patchType: "json",
        patch: [{ op: "add", path: "/metadata/labels", value: { init: "yes" } }],
      },
    ]),
  };

  it("parses rules in key order and reports broken ones", () => {
    const { rules, warnings } = parseInitializers(data);
    expect(rules.map((r) => r.name)).toEqual(["sidecar.example.com", "30-json"]);
    expect(warnings).toEqual(["initializer 20-broken: not JSON; skipped"]);
  });

  it("injects the sidecar only into pods that expose port 80", () => {
    const { rules } = parseInitializers(data);
    const web = pod({ containers: [{ name: "web", image: "nginx", ports: [{ containerPort: 80 }] }] });
    const warnings: string[] = [];
    expect(applyInitializers(rules, "CREATE", "pods", "Pod", web, warnings)).toEqual([
      "sidecar.example.com",
      "30-json",
    ]);
    // strategic merge puts the patch's new items first, as upstream does without $setElementOrder
    expect(web.spec.containers.map((c: any) => c.name)).toEqual(["proxy", "web"]);
    expect(web.metadata.annotations).toEqual({
      "sidecar/injected": "true",
      [APPLIED_ANNOTATION]: "sidecar.example.com,30-json",
    });
    expect(web.metadata.labels).toEqual({ init: "yes" });
    const other = pod({ containers: [{ name: "db", image: "pg", ports: [{ containerPort: 5432 }] }] });
    expect(applyInitializers(rules, "CREATE", "pods", "Pod", other, warnings)).toEqual(["30-json"]);
    expect(other.spec.containers).toHaveLength(1);
    expect(applyInitializers(rules, "UPDATE", "pods", "Pod", other, warnings)).toEqual([]);
  });
});

describe("plugin switches", () => {
  const names = (v?: string) => enabledPlugins(v).map((p) => p.name);
  it("SecurityContextDeny is off unless enabled; others can be disabled", () => {
    expect(names(undefined)).not.toContain("SecurityContextDeny");
    expect(names(undefined)).toContain("PodSecurity");
    expect(names("SecurityContextDeny")).toContain("SecurityContextDeny");
    const custom = names("+SecurityContextDeny, -PodSecurity,-ResourceQuota");
    expect(custom).toContain("SecurityContextDeny");
    expect(custom).not.toContain("PodSecurity");
    expect(custom).not.toContain("ResourceQuota");
    expect(names("")[names("").length - 1]).toBe("ResourceQuota");
  });
});
