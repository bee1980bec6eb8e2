// node.k8s.io/v1 RuntimeClasses and the RuntimeClass admission plugin through real workerd and
// kubectl: upstream's validation and table, and a pod naming a class getting its overhead,
// node selector and tolerations, or refused in upstream's words. The node side (the handler
// given to CRI) is in test/e2e/edgelet/controllers.test.ts.
import { describe, expect, it } from "vitest";
import { api, causes, freshNamespace, hasKubectl, kubectl, shared } from "../helpers/cluster";

const t = shared();
const RC = "/apis/node.k8s.io/v1/runtimeclasses";
const uniq = () => Math.random().toString(36).slice(2, 7);

const rc = (name: string, more: Record<string, unknown>) => ({
  apiVersion: "node.k8s.io/v1",
  kind: "RuntimeClass",
  metadata: { name },
  ...more,
});
const pod = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name },
  spec: { containers: [{ name: "c", image: "busybox" }], ...spec },
});

describe("node.k8s.io/v1 runtimeclasses", () => {
  it("validates classes as upstream, the handler immutable", async () => {
    expect(
      await causes(
        await api(
          t,
          "POST",
          RC,
          rc(`r-${uniq()}`, {
            handler: "Not_A_Label",
            overhead: { podFixed: { cpu: "-1" } },
            scheduling: {
              nodeSelector: { "bad key!": "x" },
              tolerations: [{ operator: "Exists", value: "v" }],
            },
          }),
        ),
      ),
    ).toEqual([
      "handler: Invalid value: \"Not_A_Label\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
      'overhead.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0',
      "scheduling.nodeSelector: Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
      `scheduling.tolerations.tolerations[0].operator: Invalid value: {"operator":"Exists","value":"v"}: value must be empty when \`operator\` is 'Exists'`,
    ]);
    const name = `r-${uniq()}`;
    expect((await api(t, "POST", RC, rc(name, { handler: "runc" }))).status).toBe(201);
    const changed = await api(
      t,
      "PATCH",
      `${RC}/${name}`,
      { handler: "kata" },
      { "content-type": "application/merge-patch+json" },
    );
    expect(await causes(changed)).toEqual(['handler: Invalid value: "kata": field is immutable']);
    if (hasKubectl) {
      const out = await kubectl(t, ["get", "runtimeclass", name]);
      expect(out.stdout).toMatch(new RegExp(`^NAME\\s+HANDLER\\s+AGE\\n${name}\\s+runc\\s+\\S+\\n$`));
    }
    await api(t, "DELETE", `${RC}/${name}`);
  });

  it("gives a pod its class's overhead and scheduling, and refuses what upstream refuses", async () => {
    const ns = await freshNamespace(t);
    const name = `r-${uniq()}`;
    const made = await api(
      t,
      "POST",
      RC,
      rc(name, {
        handler: "runc",
        overhead: { podFixed: { cpu: "250m", memory: "64Mi" } },
        scheduling: {
          nodeSelector: { "runtime/sandboxed": "yes" },
          tolerations: [{ key: "sandboxed", operator: "Exists", effect: "NoSchedule" }],
        },
      }),
    );
    expect(made.status, made.text).toBe(201);
    const p = await api(
      t,
      "POST",
      `/api/v1/namespaces/${ns}/pods`,
      pod("a", {
        runtimeClassName: name,
        nodeSelector: { disk: "ssd" },
      }),
    );
    expect(p.status, p.text).toBe(201);
    expect(p.json.spec.overhead).toEqual({ cpu: "250m", memory: "64Mi" });
    expect(p.json.spec.nodeSelector).toEqual({ disk: "ssd", "runtime/sandboxed": "yes" });
    expect(p.json.spec.tolerations).toContainEqual({
      key: "sandboxed",
      operator: "Exists",
      effect: "NoSchedule",
    });
    const refused = async (body: unknown) => {
      const r = await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, body);
      expect(r.status, r.text).toBe(403);
      return r.json.message;
    };
    expect(await refused(pod("b", { runtimeClassName: "nope" }))).toBe(
      'pods "b" is forbidden: pod rejected: RuntimeClass "nope" not found',
    );
    expect(
      await refused(pod("c", { runtimeClassName: name, nodeSelector: { "runtime/sandboxed": "no" } })),
    ).toBe(
      'pods "c" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[runtime/sandboxed] = yes; pod.spec.nodeSelector[runtime/sandboxed] = no',
    );
    expect(await refused(pod("d", { overhead: { cpu: "1" } }))).toBe(
      'pods "d" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead',
    );
    await api(t, "DELETE", `${RC}/${name}`);
  });
});
