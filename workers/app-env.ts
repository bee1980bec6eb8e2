// The Hono app's typed context: bindings and what the filters attach to each request.

import type { UserInfo } from "../api/user";
import type { Env } from "../durable-objects/env";
import type { RequestInfo } from "./request-info";

export interface AppEnv {
  Bindings: Env;
  Variables: {
    info: RequestInfo;
    /** the request's URL, parsed once (each parse is a runtime object freed only by a full GC) */
    url: URL;
    user: UserInfo;
  };
}
