// Names of the CRDs of one group, first come, first served, as upstream's naming controller
// gives them: a CRD asking for a kind, list kind, singular or short name another CRD of its
// group holds is stored with NamesAccepted False and is not established (not served); when the
// holder goes, the names are its, and it is established. Through real workerd and kubectl, on
// a server of its own (CRDs change discovery).
import { describe, expect, it } from "vitest";
import { api, hasKubectl, kubectl, until } from "../helpers/cluster";
import { crdManifest } from "../helpers/crds";
import { ownServerForSuite } from "../helpers/own-server";

const t = ownServerForSuite();
const CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const GROUP = "names.example.com";

function crd(plural: string, kind: string, shortNames?: string[]) {
  return crdManifest(GROUP, { plural, kind, ...(shortNames ? { shortNames } : {}) }, [
    {
      name: "v1",
      served: true,
      storage: true,
      schema: { openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true } },
    },
  ]);
}

type Condition = { type: string; status: string; reason: string; message: string };
const condition = (obj: { status?: { conditions?: Condition[] } }, type: string) =>
  obj.status?.conditions?.find((c) => c.type === type);
const served = async (plural: string) => (await api(t, "GET", `/apis/${GROUP}/v1/${plural}`)).status;

describe("CRD names in a group", () => {
  it("accepts the first CRD's names and establishes it at once", async () => {
    const r = await api(t, "POST", CRDS, crd("alphas", "Alpha", ["al"]));
    expect(r.status, r.text).toBe(201);
    expect(r.json.status.acceptedNames).toEqual({
      plural: "alphas",
      singular: "alpha",
      shortNames: ["al"],
      kind: "Alpha",
      listKind: "AlphaList",
    });
    expect(condition(r.json, "NamesAccepted")).toMatchObject({ status: "True", reason: "NoConflicts" });
    expect(condition(r.json, "Established")).toMatchObject({
      status: "True",
      reason: "InitialNamesAccepted",
    });
    await until("alphas served", async () => (await served("alphas")) === 200);
  });

  it("leaves a CRD whose names another holds unaccepted and unserved", async () => {
    const b = await api(t, "POST", CRDS, crd("betas", "Alpha"));
    expect(b.status, b.text).toBe(201);
    // its singular (the kind in lower case), kind and list kind are all taken; the last
    // conflict is the one told
    expect(b.json.status.acceptedNames).toEqual({ plural: "betas" });
    expect(condition(b.json, "NamesAccepted")).toMatchObject({
      status: "False",
      reason: "ListKindConflict",
      message: '"AlphaList" is already in use',
    });
    expect(condition(b.json, "Established")).toMatchObject({
      status: "False",
      reason: "NotAccepted",
      message: "not all names are accepted",
    });
    const g = await api(t, "POST", CRDS, crd("gammas", "Gamma", ["gm", "al"]));
    expect(g.status, g.text).toBe(201);
    expect(condition(g.json, "NamesAccepted")).toMatchObject({
      status: "False",
      reason: "ShortNamesConflict",
      message: '"al" is already in use',
    });
    expect(g.json.status.acceptedNames.shortNames).toBeUndefined();
    expect(await served("betas")).toBe(404);
    expect(await served("gammas")).toBe(404);
    const discovery = await api(t, "GET", `/apis/${GROUP}/v1`);
    expect(discovery.json.resources.map((r: { name: string }) => r.name)).toEqual(["alphas"]);
    if (!hasKubectl) return;
    const k = await kubectl(t, [
      "get",
      "crd",
      `betas.${GROUP}`,
      "-o",
      'jsonpath={.status.conditions[?(@.type=="NamesAccepted")].message}',
    ]);
    expect(k.code, k.stderr).toBe(0);
    expect(k.stdout).toBe('"AlphaList" is already in use');
  });

  it("gives the names to the waiting CRDs when their holder goes", async () => {
    const del = await api(t, "DELETE", `${CRDS}/alphas.${GROUP}`);
    expect(del.status, del.text).toBe(200);
    if (hasKubectl) {
      const k = await kubectl(t, [
        "wait",
        "--for=condition=Established",
        `crd/betas.${GROUP}`,
        `crd/gammas.${GROUP}`,
        "--timeout=20s",
      ]);
      expect(k.code, k.stderr).toBe(0);
    } else {
      await until(
        "betas established",
        async () =>
          condition((await api(t, "GET", `${CRDS}/betas.${GROUP}`)).json, "Established")?.status === "True",
        20_000,
      );
    }
    const b = (await api(t, "GET", `${CRDS}/betas.${GROUP}`)).json;
    expect(b.status.acceptedNames).toEqual({
      plural: "betas",
      singular: "alpha",
      kind: "Alpha",
      listKind: "AlphaList",
    });
    expect(condition(b, "NamesAccepted")).toMatchObject({ status: "True", reason: "NoConflicts" });
    const g = (await api(t, "GET", `${CRDS}/gammas.${GROUP}`)).json;
    expect(g.status.acceptedNames.shortNames).toEqual(["gm", "al"]);
    await until(
      "betas and gammas served",
      async () => (await served("betas")) === 200 && (await served("gammas")) === 200,
    );
    const made = await api(t, "POST", `/apis/${GROUP}/v1/namespaces/default/betas`, {
      apiVersion: `${GROUP}/v1`,
      kind: "Alpha",
      metadata: { name: "one" },
    });
    expect(made.status, made.text).toBe(201);
  });

  it("keeps an established CRD's names while a new one it asks for is taken", async () => {
    const cur = (await api(t, "GET", `${CRDS}/gammas.${GROUP}`)).json;
    cur.spec.names.singular = "alpha"; // betas holds it now
    const r = await api(t, "PUT", `${CRDS}/gammas.${GROUP}`, cur);
    expect(r.status, r.text).toBe(200);
    expect(r.json.status.acceptedNames.singular).toBe("gamma");
    expect(condition(r.json, "NamesAccepted")).toMatchObject({
      status: "False",
      reason: "SingularConflict",
      message: '"alpha" is already in use',
    });
    expect(condition(r.json, "Established")).toMatchObject({ status: "True" });
    const discovery = await api(t, "GET", `/apis/${GROUP}/v1`);
    const gammas = discovery.json.resources.find((x: { name: string }) => x.name === "gammas");
    expect(gammas.singularName).toBe("gamma");
  });
});
