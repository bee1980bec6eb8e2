// How the control plane's own objects reach the apiserver without importing it: the Worker
// gives the controller manager and the scheduler this, and their requests are served in
// process through the same authentication, authorization and admission as any client's.
import type { UserInfo } from "../api/user";
import type { Env } from "./env";

export interface Apiserver {
  /** Serves one request as `user` (an in-process request no outside caller can forge). */
  serve(user: UserInfo, url: string, init: RequestInit, env: Env): Promise<Response>;
  /** A legacy (secret-bound, non-expiring) service account token, signed with the apiserver's key. */
  legacyToken(
    env: Env,
    sa: { namespace: string; name: string; uid: string },
    secretName: string,
  ): Promise<string>;
}
