// The plugins end to end with a fake store (configurations, namespaces, params) and a fake fetch.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { KubeObject } from "../../../api/types";

const objects: Record<string, KubeObject[]> = {};
vi.mock("../../../durable-objects/store/client", () => ({
  onStoreWrite: () => {},
  Store: class {
    constructor(
      _env: unknown,
      readonly def: { group: string; resource: string },
    ) {}
    async listText() {
      return JSON.stringify({ items: objects[this.def.resource] ?? [] });
    }
    async find(namespace: string, name: string) {
      return (objects[this.def.resource] ?? []).find(
        (o) => o.metadata.name === name && (o.metadata.namespace ?? "") === namespace,
      );
    }
  },
}));

const { lookupGVR } = await import("../../../api/registry");
const { clearConfigCache } = await import("../../../workers/admission/dynamic-match");
const { mutatingWebhooks, validatingWebhooks } = await import("../../../workers/admission/webhooks");
const { validatingAdmissionPolicy } = await import("../../../workers/admission/policy");
type Attrs = import("../../../workers/admission/index").AdmissionAttributes;

function attrs(object: KubeObject, dryRun = false): Attrs {
  const def = lookupGVR("", "v1", "configmaps")!;
  const c = { env: { EDGEPLANE_CLUSTER: "t" }, get: () => ({ name: "bob", uid: "u", groups: [] }) };
  return {
    w: { c, def, info: { subresource: "", namespace: "ns1", name: "" }, dryRun, warnings: [] } as never,
    operation: "CREATE",
    object,
    old: undefined,
  };
}

const cm = (labels: Record<string, string> = {}): KubeObject =>
  ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "c", namespace: "ns1", labels },
    data: {},
  }) as KubeObject;

const hook = (name: string, url: string, extra: Record<string, unknown> = {}) => ({
  name,
  clientConfig: { url },
  rules: [
    { operations: ["CREATE"], apiGroups: [""], apiVersions: ["v1"], resources: ["configmaps"], scope: "*" },
  ],
  failurePolicy: "Fail",
  sideEffects: "None",
  timeoutSeconds: 5,
  ...extra,
});

type Handler = (review: any) => Record<string, unknown> | number;
const handlers: Record<string, Handler> = {};
const seen: string[] = [];

beforeEach(() => {
  for (const k of Object.keys(objects)) delete objects[k];
  for (const k of Object.keys(handlers)) delete handlers[k];
  seen.length = 0;
  clearConfigCache();
  objects.namespaces = [
    { apiVersion: "v1", kind: "Namespace", metadata: { name: "ns1", labels: { team: "a" } } } as KubeObject,
  ];
  vi.stubGlobal("fetch", async (url: string, init: RequestInit) => {
    const path = new URL(url).pathname;
    seen.push(path);
    const review = JSON.parse(String(init.body));
    const h = handlers[path];
    const out = h ? h(review) : { allowed: true };
    if (typeof out === "number") return new Response("nope", { status: out });
    return new Response(
      JSON.stringify({
        apiVersion: "admission.k8s.io/v1",
        kind: "AdmissionReview",
        response: { uid: review.request.uid, ...out },
      }),
    );
  });
});
afterEach(() => vi.unstubAllGlobals());

const addLabel = (key: string) => (_r: any) => ({
  allowed: true,
  patchType: "JSONPatch",
  patch: btoa(JSON.stringify([{ op: "add", path: `/metadata/labels/${key}`, value: "1" }])),
});

describe("mutating webhooks", () => {
  it("patches the object in place and reinvokes IfNeeded webhooks after a later change", async () => {
    objects.mutatingwebhookconfigurations = [
      {
        metadata: { name: "m" },
        webhooks: [
          hook("first.x.y", "http://h/first", { reinvocationPolicy: "IfNeeded" }),
          hook("second.x.y", "http://h/second"),
        ],
      } as unknown as KubeObject,
    ];
    handlers["/second"] = addLabel("second");
    const a = attrs(cm());
    const obj = a.object!;
    await mutatingWebhooks.mutate!(a);
    expect(a.object).toBe(obj);
    expect(obj.metadata.labels).toEqual({ second: "1" });
    expect(seen).toEqual(["/first", "/second", "/first"]);
  });

  it("does not reinvoke webhooks with reinvocationPolicy Never", async () => {
    objects.mutatingwebhookconfigurations = [
      {
        metadata: { name: "m" },
        webhooks: [hook("first.x.y", "http://h/first"), hook("second.x.y", "http://h/second")],
      } as unknown as KubeObject,
    ];
    handlers["/second"] = addLabel("second");
    await mutatingWebhooks.mutate!(attrs(cm()));
    expect(seen).toEqual(["/first", "/second"]);
  });

  it("selects by namespace labels and object labels", async () => {
    objects.mutatingwebhookconfigurations = [
      {
        metadata: { name: "m" },
        webhooks: [
          hook("ns-b.x.y", "http://h/nsb", { namespaceSelector: { matchLabels: { team: "b" } } }),
          hook("ns-a.x.y", "http://h/nsa", { namespaceSelector: { matchLabels: { team: "a" } } }),
          hook("obj.x.y", "http://h/obj", { objectSelector: { matchLabels: { pick: "me" } } }),
        ],
      } as unknown as KubeObject,
    ];
    await mutatingWebhooks.mutate!(attrs(cm()));
    expect(seen).toEqual(["/nsa"]);
    seen.length = 0;
    await mutatingWebhooks.mutate!(attrs(cm({ pick: "me" })));
    expect(seen).toEqual(["/nsa", "/obj"]);
  });

  it("skips webhooks whose matchConditions are false", async () => {
    objects.mutatingwebhookconfigurations = [
      {
        metadata: { name: "m" },
        webhooks: [
          hook("cond.x.y", "http://h/cond", {
            matchConditions: [{ name: "only-bob", expression: "request.userInfo.username == 'alice'" }],
          }),
        ],
      } as unknown as KubeObject,
    ];
    await mutatingWebhooks.mutate!(attrs(cm()));
    expect(seen).toEqual([]);
  });

  it("rejects a patch that makes the object invalid", async () => {
    objects.mutatingwebhookconfigurations = [
      { metadata: { name: "m" }, webhooks: [hook("bad.x.y", "http://h/bad")] } as unknown as KubeObject,
    ];
    handlers["/bad"] = () => ({
      allowed: true,
      patchType: "JSONPatch",
      patch: btoa(JSON.stringify([{ op: "add", path: "/metadata/labels", value: { "bad key!": "x" } }])),
    });
    await expect(mutatingWebhooks.mutate!(attrs(cm()))).rejects.toMatchObject({ code: 422 });
  });
});

describe("validating webhooks", () => {
  it("Fail rejects a failed call with 500; Ignore admits", async () => {
    objects.validatingwebhookconfigurations = [
      { metadata: { name: "v" }, webhooks: [hook("f.x.y", "http://h/f")] } as unknown as KubeObject,
    ];
    handlers["/f"] = () => 500;
    await expect(validatingWebhooks.validate!(attrs(cm()))).rejects.toMatchObject({
      code: 500,
      reason: "InternalError",
      message: expect.stringContaining(
        'Internal error occurred: failed calling webhook "f.x.y": failed to call webhook: ',
      ),
    });
    clearConfigCache();
    objects.validatingwebhookconfigurations = [
      {
        metadata: { name: "v" },
        webhooks: [hook("f.x.y", "http://h/f", { failurePolicy: "Ignore" })],
      } as unknown as KubeObject,
    ];
    await expect(validatingWebhooks.validate!(attrs(cm()))).resolves.toBeUndefined();
  });

  it("a service reference is a call failure", async () => {
    objects.validatingwebhookconfigurations = [
      {
        metadata: { name: "v" },
        webhooks: [{ ...hook("s.x.y", ""), clientConfig: { service: { namespace: "a", name: "b" } } }],
      } as unknown as KubeObject,
    ];
    await expect(validatingWebhooks.validate!(attrs(cm()))).rejects.toMatchObject({ code: 500 });
    expect(seen).toEqual([]);
  });

  it("denies with the webhook's message and passes warnings on", async () => {
    objects.validatingwebhookconfigurations = [
      { metadata: { name: "v" }, webhooks: [hook("d.x.y", "http://h/d")] } as unknown as KubeObject,
    ];
    handlers["/d"] = () => ({
      allowed: false,
      status: { code: 409, message: "busy" },
      warnings: ["careful"],
    });
    const a = attrs(cm());
    await expect(validatingWebhooks.validate!(a)).rejects.toMatchObject({
      code: 409,
      message: 'admission webhook "d.x.y" denied the request: busy',
    });
    expect(a.w.warnings).toEqual(["careful"]);
  });

  it("a webhook with side effects is refused on dry run", async () => {
    objects.validatingwebhookconfigurations = [
      {
        metadata: { name: "v" },
        webhooks: [hook("se.x.y", "http://h/se", { sideEffects: "Some" })],
      } as unknown as KubeObject,
    ];
    await expect(validatingWebhooks.validate!(attrs(cm(), true))).rejects.toMatchObject({
      code: 400,
      message: 'admission webhook "se.x.y" does not support dry run',
    });
    expect(seen).toEqual([]);
  });
});

describe("ValidatingAdmissionPolicy", () => {
  const policy = (spec: Record<string, unknown>) =>
    ({
      metadata: { name: "p" },
      spec: {
        failurePolicy: "Fail",
        matchConstraints: {
          resourceRules: [
            { apiGroups: [""], apiVersions: ["v1"], operations: ["*"], resources: ["configmaps"] },
          ],
        },
        ...spec,
      },
    }) as unknown as KubeObject;
  const binding = (spec: Record<string, unknown>) =>
    ({
      metadata: { name: "b" },
      spec: { policyName: "p", validationActions: ["Deny"], ...spec },
    }) as unknown as KubeObject;

  it("uses ConfigMap params and namespaceObject", async () => {
    objects.validatingadmissionpolicies = [
      policy({
        paramKind: { apiVersion: "v1", kind: "ConfigMap" },
        validations: [
          {
            expression: "object.metadata.labels.tier == params.data.tier",
            messageExpression: "'tier must be ' + params.data.tier",
          },
          { expression: "namespaceObject.metadata.labels.team == 'a'" },
        ],
      }),
    ];
    objects.validatingadmissionpolicybindings = [
      binding({ paramRef: { name: "limits", namespace: "ns1", parameterNotFoundAction: "Deny" } }),
    ];
    objects.configmaps = [
      {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "limits", namespace: "ns1" },
        data: { tier: "gold" },
      } as KubeObject,
    ];
    await expect(validatingAdmissionPolicy.validate!(attrs(cm({ tier: "gold" })))).resolves.toBeUndefined();
    await expect(validatingAdmissionPolicy.validate!(attrs(cm({ tier: "tin" })))).rejects.toMatchObject({
      code: 422,
      reason: "Invalid",
      message: `configmaps "c" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: tier must be gold`,
    });
  });

  it("denies when params are missing and the action is Deny", async () => {
    objects.validatingadmissionpolicies = [
      policy({ paramKind: { apiVersion: "v1", kind: "ConfigMap" }, validations: [{ expression: "true" }] }),
    ];
    objects.validatingadmissionpolicybindings = [
      binding({ paramRef: { name: "nope", parameterNotFoundAction: "Deny" } }),
    ];
    await expect(validatingAdmissionPolicy.validate!(attrs(cm()))).rejects.toMatchObject({
      message: expect.stringContaining(
        "no params found for policy binding with `Deny` parameterNotFoundAction",
      ),
    });
  });

  it("Warn adds a warning instead of denying", async () => {
    objects.validatingadmissionpolicies = [
      policy({ validations: [{ expression: "false", message: "never" }] }),
    ];
    objects.validatingadmissionpolicybindings = [binding({ validationActions: ["Warn"] })];
    const a = attrs(cm());
    await validatingAdmissionPolicy.validate!(a);
    expect(a.w.warnings).toEqual([
      "Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': never",
    ]);
  });

  it("binding matchResources narrows the policy", async () => {
    objects.validatingadmissionpolicies = [policy({ validations: [{ expression: "false" }] })];
    objects.validatingadmissionpolicybindings = [
      binding({ matchResources: { namespaceSelector: { matchLabels: { team: "b" } } } }),
    ];
    await expect(validatingAdmissionPolicy.validate!(attrs(cm()))).resolves.toBeUndefined();
    clearConfigCache();
    objects.validatingadmissionpolicybindings = [
      binding({ matchResources: { namespaceSelector: { matchLabels: { team: "a" } } } }),
    ];
    await expect(validatingAdmissionPolicy.validate!(attrs(cm()))).rejects.toMatchObject({ code: 422 });
  });
});
