import { describe, expect, it } from "vitest";
import type { Crd } from "../../../api/custom/definition";
import { acceptNames, crdNames, namesPending } from "../../../api/custom/naming";

const held = (resources: string[], kinds: string[]) => ({
  resource: (n: string) => resources.includes(n),
  kind: (n: string) => kinds.includes(n),
});

const crd = (names: Record<string, unknown>, status?: Record<string, unknown>) =>
  ({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${names.plural}.g.example.com` },
    spec: { group: "g.example.com", scope: "Namespaced", names, versions: [] },
    status,
  }) as unknown as Crd;

describe("CRD names", () => {
  const want = { plural: "bees", singular: "bee", shortNames: ["b", "bb"], kind: "Bee", listKind: "BeeList" };

  it("accepts free names", () => {
    expect(acceptNames(want, {}, held([], []))).toEqual({
      names: want,
      condition: {
        type: "NamesAccepted",
        status: "True",
        reason: "NoConflicts",
        message: "no conflicts found",
      },
    });
  });

  it("keeps what another CRD holds out, and says which conflict came last", () => {
    const r = acceptNames(want, {}, held(["bee"], ["Bee", "BeeList"]));
    expect(r.names).toEqual({ plural: "bees", shortNames: ["b", "bb"] });
    expect(r.condition).toEqual({
      type: "NamesAccepted",
      status: "False",
      reason: "ListKindConflict",
      message: '"BeeList" is already in use',
    });
    const short = acceptNames(want, {}, held(["b", "bb"], []));
    expect(short.names.shortNames).toBeUndefined();
    expect(short.condition.message).toBe('["b" is already in use, "bb" is already in use]');
  });

  it("keeps names accepted before, and the old ones while new ones are taken", () => {
    // another CRD took "bee" after this one had it: still this one's
    expect(acceptNames(want, want, held(["bee", "b"], ["Bee"])).condition.status).toBe("True");
    const renamed = acceptNames({ ...want, singular: "wasp" }, want, held(["wasp"], []));
    expect(renamed.names.singular).toBe("bee");
    expect(renamed.condition).toMatchObject({
      reason: "SingularConflict",
      message: '"wasp" is already in use',
    });
  });

  it("settles status in the shard: established when accepted, and for good", () => {
    const taken = new Set<string>();
    const ctx = { taken: (k: string) => taken.has(k), env: {} };
    const first = crd(want);
    crdNames.allocate(first, undefined, ctx);
    expect(first.status.acceptedNames).toEqual(want);
    expect(
      first.status.conditions.map((c: { type: string; status: string }) => `${c.type}=${c.status}`),
    ).toEqual(["NamesAccepted=True", "Established=True"]);
    expect(crdNames.held(first).sort()).toEqual(
      [
        "kind:g.example.com:Bee",
        "kind:g.example.com:BeeList",
        "resource:g.example.com:b",
        "resource:g.example.com:bb",
        "resource:g.example.com:bee",
        "resource:g.example.com:bees",
      ].sort(),
    );
    for (const k of crdNames.held(first)) taken.add(k);
    const second = crd({ plural: "hives", singular: "hive", kind: "Bee", listKind: "HiveList" });
    crdNames.allocate(second, undefined, ctx);
    expect(namesPending(second)).toBe(true);
    expect(second.status.acceptedNames).toEqual({ plural: "hives", singular: "hive", listKind: "HiveList" });
    expect(second.status.conditions).toContainEqual(
      expect.objectContaining({ type: "Established", status: "False", reason: "NotAccepted" }),
    );
    // the holder renamed: a write accepts the kind, and establishes the CRD
    taken.delete("kind:g.example.com:Bee");
    const again = structuredClone(second);
    crdNames.allocate(again, second, ctx);
    expect(namesPending(again)).toBe(false);
    expect(again.status.acceptedNames.kind).toBe("Bee");
    expect(again.status.conditions).toContainEqual(
      expect.objectContaining({ type: "Established", status: "True", reason: "InitialNamesAccepted" }),
    );
    // an established CRD asking for a taken name keeps its old one, and stays established
    taken.add("resource:g.example.com:drone");
    const renamed = structuredClone(again);
    renamed.spec.names.singular = "drone";
    crdNames.allocate(renamed, again, ctx);
    expect(renamed.status.acceptedNames.singular).toBe("hive");
    expect(renamed.status.conditions).toContainEqual(
      expect.objectContaining({ type: "Established", status: "True" }),
    );
    // a client's acceptedNames are not believed
    const forged = crd(
      { plural: "ants", singular: "ant", kind: "Bee", listKind: "AntList" },
      {
        acceptedNames: { plural: "ants", singular: "ant", kind: "Bee", listKind: "AntList" },
      },
    );
    taken.add("kind:g.example.com:Bee");
    crdNames.allocate(forged, undefined, ctx);
    expect(forged.status.acceptedNames.kind).toBeUndefined();
  });
});
