import { describe, expect, it } from "vitest";
import { policyFrom } from "../../../workers/admission/pod-security";
import { checkPod, describeViolations } from "../../../workers/admission/pod-security-checks";

const restrictedOk = {
  securityContext: { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } },
  containers: [
    { name: "c", securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } } },
  ],
};

describe("Pod Security Standards", () => {
  it("a privileged pod violates restricted in upstream's words and order", () => {
    const spec = { containers: [{ name: "c", securityContext: { privileged: true } }] };
    expect(describeViolations(checkPod("restricted", {}, spec))).toBe(
      'privileged (container "c" must not set securityContext.privileged=true), ' +
        'allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), ' +
        'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), ' +
        'runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), ' +
        'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
    );
  });

  it("a compliant pod passes restricted; a plain pod passes baseline", () => {
    expect(checkPod("restricted", {}, restrictedOk)).toEqual([]);
    expect(checkPod("baseline", {}, { containers: [{ name: "c" }] })).toEqual([]);
    expect(checkPod("privileged", {}, { hostNetwork: true, containers: [] })).toEqual([]);
  });

  it("baseline: host namespaces, hostPath, hostPort, capabilities, sysctls, procMount, seLinux", () => {
    const spec = {
      hostNetwork: true,
      hostPID: true,
      securityContext: { sysctls: [{ name: "kernel.msgmax" }], seLinuxOptions: { user: "u" } },
      volumes: [
        { name: "h", hostPath: { path: "/" } },
        { name: "e", emptyDir: {} },
      ],
      containers: [
        {
          name: "a",
          ports: [{ containerPort: 80, hostPort: 8080 }],
          securityContext: { capabilities: { add: ["NET_ADMIN", "CHOWN"] } },
        },
        { name: "b", securityContext: { procMount: "Unmasked" } },
      ],
    };
    expect(checkPod("baseline", {}, spec).map((v) => `${v.reason} (${v.detail})`)).toEqual([
      'non-default capabilities (container "a" must not include "NET_ADMIN" in securityContext.capabilities.add)',
      "host namespaces (hostNetwork=true, hostPID=true)",
      'hostPath volumes (volume "h")',
      'hostPort (container "a" uses hostPort 8080)',
      'procMount (container "b" must not set securityContext.procMount to "Unmasked")',
      'seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: user "u")',
      "forbidden sysctls (kernel.msgmax)",
    ]);
  });

  it("restricted replaces hostPath with volume types and checks runAsUser=0", () => {
    const spec = {
      ...restrictedOk,
      securityContext: { ...restrictedOk.securityContext, runAsUser: 0 },
      volumes: [{ name: "h", hostPath: { path: "/" } }],
    };
    expect(describeViolations(checkPod("restricted", {}, spec))).toBe(
      'restricted volume types (volume "h" uses restricted volume type "hostPath"), runAsUser=0 (pod must not set runAsUser=0)',
    );
  });

  it("reads the namespace labels", () => {
    expect(policyFrom({ "pod-security.kubernetes.io/enforce": "restricted" }, "enforce")).toEqual({
      level: "restricted",
      version: "latest",
    });
    expect(
      policyFrom(
        { "pod-security.kubernetes.io/warn": "baseline", "pod-security.kubernetes.io/warn-version": "v1.30" },
        "warn",
      ),
    ).toEqual({ level: "baseline", version: "v1.30" });
    expect(policyFrom({ "pod-security.kubernetes.io/enforce": "privileged" }, "enforce")).toBeUndefined();
    expect(policyFrom({}, "enforce")).toBeUndefined();
  });
});
