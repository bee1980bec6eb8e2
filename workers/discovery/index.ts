// Discovery, OpenAPI and field checks: the public surface of this folder.

export { versionBody } from "../../api/version";
export {
  aggregatedContentType,
  aggregatedDiscoveryBody,
  apiGroupBody,
  apiGroupListBody,
  apiResourceListBody,
  apiVersionsBody,
  negotiateDiscovery,
} from "./discovery";
export { knownFieldsCheck, unknownFieldMessages, unknownFields } from "./fields";
export { openapiV2Document } from "./openapi-v2";
export { encodeOpenapiV2, OPENAPI_V2_PROTO_CONTENT_TYPE } from "./openapi-v2-proto";
export { openapiV3Document, openapiV3Index } from "./openapi-v3";
export { type DiscoveryRequest, type DiscoveryResponse, handleDiscovery, openapiRoutes } from "./routes";
