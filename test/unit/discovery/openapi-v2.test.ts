import protobuf from "protobufjs";
import { describe, expect, it } from "vitest";
import { StatusError } from "../../../api/errors";
import { openapiV2Document } from "../../../workers/discovery/openapi-v2";
import { encodeOpenapiV2, OPENAPI_V2_PROTO_CONTENT_TYPE } from "../../../workers/discovery/openapi-v2-proto";
import { handleDiscovery } from "../../../workers/discovery/routes";
import { FIXTURE } from "./fixture";

// The messages of gnostic's openapi.v2 package that these checks read (field numbers as published).
const PROTO = `
syntax = "proto3";
package openapi.v2;
message Any { string yaml = 2; }
message NamedAny { string name = 1; Any value = 2; }
message Info { string title = 1; string version = 2; }
message TypeItem { repeated string value = 1; }
message ItemsItem { repeated Schema schema = 1; }
message AdditionalPropertiesItem { oneof oneof { Schema schema = 1; bool boolean = 2; } }
message NamedSchema { string name = 1; Schema value = 2; }
message Properties { repeated NamedSchema additional_properties = 1; }
message Schema {
  string _ref = 1; string format = 2; string description = 4; repeated string required = 19;
  repeated Any enum = 20; AdditionalPropertiesItem additional_properties = 21; TypeItem type = 22;
  ItemsItem items = 23; repeated Schema all_of = 24; Properties properties = 25; repeated NamedAny vendor_extension = 31;
}
message Definitions { repeated NamedSchema additional_properties = 1; }
message BodyParameter { string description = 1; string name = 2; string in = 3; bool required = 4; Schema schema = 5; }
message QueryParameterSubSchema { bool required = 1; string in = 2; string description = 3; string name = 4; string type = 6; bool unique_items = 20; }
message PathParameterSubSchema { bool required = 1; string in = 2; string description = 3; string name = 4; string type = 5; bool unique_items = 19; }
message NonBodyParameter { oneof oneof { QueryParameterSubSchema query_parameter_sub_schema = 3; PathParameterSubSchema path_parameter_sub_schema = 4; } }
message Parameter { oneof oneof { BodyParameter body_parameter = 1; NonBodyParameter non_body_parameter = 2; } }
message ParametersItem { oneof oneof { Parameter parameter = 1; } }
message SchemaItem { oneof oneof { Schema schema = 1; } }
message Response { string description = 1; SchemaItem schema = 2; }
message ResponseValue { oneof oneof { Response response = 1; } }
message NamedResponseValue { string name = 1; ResponseValue value = 2; }
message Responses { repeated NamedResponseValue response_code = 1; }
message Operation {
  repeated string tags = 1; string description = 3; string operation_id = 5; repeated string produces = 6;
  repeated string consumes = 7; repeated ParametersItem parameters = 8; Responses responses = 9;
  repeated string schemes = 10; repeated NamedAny vendor_extension = 13;
}
message PathItem { Operation get = 2; Operation put = 3; Operation post = 4; Operation delete = 5; Operation patch = 8; repeated ParametersItem parameters = 9; }
message NamedPathItem { string name = 1; PathItem value = 2; }
message Paths { repeated NamedPathItem path = 2; }
message StringArray { repeated string value = 1; }
message NamedStringArray { string name = 1; StringArray value = 2; }
message SecurityRequirement { repeated NamedStringArray additional_properties = 1; }
message ApiKeySecurity { string type = 1; string name = 2; string in = 3; string description = 4; }
message SecurityDefinitionsItem { oneof oneof { ApiKeySecurity api_key_security = 2; } }
message NamedSecurityDefinitionsItem { string name = 1; SecurityDefinitionsItem value = 2; }
message SecurityDefinitions { repeated NamedSecurityDefinitionsItem additional_properties = 1; }
message Document {
  string swagger = 1; Info info = 2; Paths paths = 8; Definitions definitions = 9;
  repeated SecurityRequirement security = 12; SecurityDefinitions security_definitions = 13;
}
`;

type Obj = Record<string, any>;
const Document = protobuf.parse(PROTO, { keepCase: true }).root.lookupType("openapi.v2.Document");

function decode(bytes: Uint8Array): Obj {
  return Document.toObject(Document.decode(bytes), { defaults: false, oneofs: true }) as Obj;
}

const ext = (list: Obj[] | undefined, name: string) => {
  const e = list?.find((x) => x.name === name);
  return e ? JSON.parse(e.value.yaml) : undefined;
};

describe("openapi v2 protobuf", () => {
  const json = openapiV2Document(FIXTURE) as Obj;
  const doc = decode(encodeOpenapiV2(json));

  it("decodes with an independent decoder into the same document", () => {
    expect(doc.swagger).toBe("2.0");
    expect(doc.info).toEqual({ title: "Kubernetes", version: "v1.32.0" });
    const names = doc.definitions.additional_properties.map((d: Obj) => d.name);
    expect(names).toEqual(Object.keys(json.definitions));
    expect(doc.paths.path.map((p: Obj) => p.name)).toEqual(Object.keys(json.paths));
    expect(doc.security[0].additional_properties[0].name).toBe("BearerToken");
    expect(doc.security_definitions.additional_properties[0].value.api_key_security).toMatchObject({
      type: "apiKey",
      in: "header",
    });
  });

  it("carries schemas, types, refs, required lists and vendor extensions", () => {
    const defs = new Map<string, Obj>(
      doc.definitions.additional_properties.map((d: Obj) => [d.name, d.value]),
    );
    const pod = defs.get("io.k8s.api.core.v1.Pod") as Obj;
    expect(ext(pod.vendor_extension, "x-kubernetes-group-version-kind")).toEqual([
      { group: "", kind: "Pod", version: "v1" },
    ]);
    const podProps = new Map<string, Obj>(
      pod.properties.additional_properties.map((p: Obj) => [p.name, p.value]),
    );
    expect(podProps.get("spec")?._ref).toBe("#/definitions/io.k8s.api.core.v1.PodSpec");
    const spec = defs.get("io.k8s.api.core.v1.PodSpec") as Obj;
    expect(spec.required).toEqual(["containers"]);
    const containers = spec.properties.additional_properties.find((p: Obj) => p.name === "containers").value;
    expect(containers.type.value).toEqual(["array"]);
    expect(containers.items.schema[0]._ref).toBe("#/definitions/io.k8s.api.core.v1.Container");
    expect(ext(containers.vendor_extension, "x-kubernetes-patch-merge-key")).toBe("name");
    expect(ext(containers.vendor_extension, "x-kubernetes-patch-strategy")).toBe("merge");
    const port = defs.get("io.k8s.api.core.v1.ContainerPort") as Obj;
    const cp = port.properties.additional_properties.find((p: Obj) => p.name === "containerPort").value;
    expect(cp).toMatchObject({ format: "int32", type: { value: ["integer"] } });
    const labels = (
      defs.get("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta") as Obj
    ).properties.additional_properties.find((p: Obj) => p.name === "labels").value;
    expect(labels.additional_properties.schema.type.value).toEqual(["string"]);
    const policy = (defs.get("io.k8s.api.core.v1.Container") as Obj).properties.additional_properties.find(
      (p: Obj) => p.name === "imagePullPolicy",
    ).value;
    expect(policy.enum.map((e: Obj) => JSON.parse(e.yaml))).toEqual(["Always", "IfNotPresent", "Never"]);
  });

  it("encodes operations with body, query and path parameters and GVK extensions", () => {
    const item = doc.paths.path.find(
      (p: Obj) => p.name === "/api/v1/namespaces/{namespace}/pods/{name}",
    ).value;
    expect(
      item.parameters
        .map((p: Obj) => p.parameter.non_body_parameter.path_parameter_sub_schema?.name)
        .filter(Boolean),
    ).toEqual(["name", "namespace"]);
    const patch = item.patch;
    expect(patch.consumes).toContain("application/strategic-merge-patch+json");
    expect(ext(patch.vendor_extension, "x-kubernetes-group-version-kind")).toEqual({
      group: "",
      version: "v1",
      kind: "Pod",
    });
    expect(ext(patch.vendor_extension, "x-kubernetes-action")).toBe("patch");
    const body = patch.parameters[0].parameter.body_parameter;
    expect(body).toMatchObject({ name: "body", in: "body", required: true });
    expect(body.schema._ref).toBe("#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch");
    const queries = patch.parameters
      .slice(1)
      .map((p: Obj) => p.parameter.non_body_parameter.query_parameter_sub_schema.name);
    expect(queries).toContain("fieldValidation");
    const ok = patch.responses.response_code.find((r: Obj) => r.name === "200").value.response;
    expect(ok.schema.schema._ref).toBe("#/definitions/io.k8s.api.core.v1.Pod");
  });
});

describe("handleDiscovery", () => {
  const get = (path: string, accept?: string, extra: Obj = {}) =>
    handleDiscovery(FIXTURE, {
      method: "GET",
      path: path.split("?")[0],
      query: new URLSearchParams(path.split("?")[1] ?? ""),
      accept,
      ...extra,
    });

  it("serves /openapi/v2 as protobuf for kubectl's Accept and as JSON otherwise", () => {
    const pb = get("/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf");
    expect(pb?.status).toBe(200);
    expect(pb?.headers["Content-Type"]).toBe(OPENAPI_V2_PROTO_CONTENT_TYPE);
    expect(decode(pb?.body as Uint8Array).swagger).toBe("2.0");
    const js = get("/openapi/v2", "application/json");
    expect(js?.headers["Content-Type"]).toBe("application/json");
    expect(JSON.parse(js?.body as string).swagger).toBe("2.0");
    expect(() => get("/openapi/v2", "text/html")).toThrow(StatusError);
  });

  it("negotiates /api and /apis and honours If-None-Match", () => {
    const agg = get(
      "/apis",
      "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
    );
    expect(agg?.headers["Content-Type"]).toBe(
      "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    );
    expect(JSON.parse(agg?.body as string).kind).toBe("APIGroupDiscoveryList");
    const again = get("/apis", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", {
      ifNoneMatch: agg?.headers.ETag,
    });
    expect(again?.status).toBe(304);
    expect(again?.body).toBeNull();
    const legacy = get("/api", "application/json", { host: "127.0.0.1:8787" });
    expect(JSON.parse(legacy?.body as string)).toMatchObject({
      kind: "APIVersions",
      serverAddressByClientCIDRs: [{ serverAddress: "127.0.0.1:8787" }],
    });
    expect(JSON.parse(get("/api/v1")?.body as string).kind).toBe("APIResourceList");
    expect(JSON.parse(get("/apis/apps")?.body as string).kind).toBe("APIGroup");
    expect(get("/apis/batch/v1")).toBeUndefined();
    expect(get("/api/v1/namespaces")).toBeUndefined();
    expect(handleDiscovery(FIXTURE, { method: "POST", path: "/api" })).toBeUndefined();
  });

  it("serves v3 documents by hash: immutable when it matches, a redirect when it does not", () => {
    const index = JSON.parse(get("/openapi/v3")?.body as string);
    const url = index.paths["api/v1"].serverRelativeURL as string;
    const doc = get(url, "application/json");
    expect(doc?.status).toBe(200);
    expect(doc?.headers["Cache-Control"]).toBe("public, immutable");
    expect(JSON.parse(doc?.body as string).openapi).toBe("3.0.0");
    const stale = get("/openapi/v3/api/v1?hash=0000", "application/json");
    expect(stale?.status).toBe(301);
    expect(stale?.headers.Location).toBe(url);
    expect(get("/openapi/v3/apis/batch/v1")).toBeUndefined();
  });
});
