// The apiserver as the control plane's own objects call it (durable-objects/apiserver.ts):
// the Worker's app serving a request marked with the component's identity, and the
// service account token signer.
import type { Apiserver } from "../durable-objects/apiserver";
import { app } from "./app";
import { issueLegacyToken } from "./authn/serviceaccount";
import { internalRequest } from "./internal";

export const inProcessApiserver: Apiserver = {
  serve: (user, url, init, env) => Promise.resolve(app.fetch(internalRequest(user, url, init), env)),
  legacyToken: (env, sa, secretName) => issueLegacyToken(env, sa, secretName),
};
