// In-process requests from the control plane's own components (controllers, scheduler):
// they go through the same app and the same authorization and admission as any client,
// authenticated by identity of the Request object itself, which no outside caller can forge.
import type { UserInfo } from "../api/user";

const identities = new WeakMap<Request, UserInfo>();
/** the JSON text an in-process request was made with: read as is, not back from its stream */
const bodies = new WeakMap<Request, string>();

export function internalUser(req: Request): UserInfo | undefined {
  return identities.get(req);
}

export function internalRequest(user: UserInfo, url: string, init: RequestInit): Request {
  const req = new Request(url, init);
  identities.set(req, user);
  if (typeof init.body === "string") bodies.set(req, init.body);
  return req;
}

/**
 * The text an in-process request's body was made from (the controllers' and the scheduler's
 * writes: a Binding and an Event per pod): decodeBody takes it instead of reading the body's
 * stream back and decoding its bytes again.
 */
export function internalBody(req: Request): string | undefined {
  return bodies.get(req);
}
