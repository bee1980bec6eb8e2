// In-process requests from the control plane's own components (controllers, scheduler):
// they go through the same app and the same authorization and admission as any client,
// authenticated by identity of the Request object itself, which no outside caller can forge.
import type { UserInfo } from "../api/user";

const identities = new WeakMap<Request, UserInfo>();

export function internalUser(req: Request): UserInfo | undefined {
  return identities.get(req);
}

export function internalRequest(user: UserInfo, url: string, init: RequestInit): Request {
  const req = new Request(url, init);
  identities.set(req, user);
  return req;
}
