// Bootstrap tokens (`<id>.<secret>`, what nodes join with): Secrets of type
// bootstrap.kubernetes.io/token named bootstrap-token-<id> in kube-system. As upstream, a
// token whose Secret is missing, deleted, expired, of the wrong type, not marked for
// authentication or holding another secret is simply not authenticated (-> 401).

import {
  BOOTSTRAP_NAMESPACE,
  BOOTSTRAP_SECRET_PREFIX,
  BOOTSTRAP_SECRET_TYPE,
  BOOTSTRAP_USER_PREFIX,
  type BootstrapTokenOptions,
  bootstrapExpired,
  bootstrapGroups,
  bootstrapTokenSecret,
  parseBootstrapToken,
  randomBootstrapToken,
  tokenSecretField,
} from "../../api/bootstrap-token";
import type { UserInfo } from "../../api/user";
import { storeObjects } from "./objects";
import { type AuthnEnv, nowMs, type ObjectSource, safeEqual, type TokenAuthenticator } from "./types";

export const bootstrapTokens: TokenAuthenticator = async (token, ctx) => {
  const parsed = parseBootstrapToken(token);
  if (!parsed) return undefined;
  const secret = await ctx.objects.get("secrets", BOOTSTRAP_NAMESPACE, BOOTSTRAP_SECRET_PREFIX + parsed.id);
  if (!secret) return undefined;
  if (secret.metadata.deletionTimestamp) return undefined;
  if (secret.type !== BOOTSTRAP_SECRET_TYPE || !secret.data) return undefined;
  if (!safeEqual(tokenSecretField(secret, "token-secret"), parsed.secret)) return undefined;
  if (tokenSecretField(secret, "token-id") !== parsed.id) return undefined;
  if (bootstrapExpired(secret, nowMs(ctx))) return undefined;
  if (tokenSecretField(secret, "usage-bootstrap-authentication") !== "true") return undefined;
  let groups: string[];
  try {
    groups = bootstrapGroups(secret);
  } catch {
    return undefined;
  }
  const user: UserInfo = { name: BOOTSTRAP_USER_PREFIX + parsed.id, uid: "", groups };
  return user;
};

/** Creates a bootstrap token Secret and returns the token `<id>.<secret>`. */
export async function createBootstrapToken(
  env: AuthnEnv,
  o: BootstrapTokenOptions = {},
  deps: { objects?: ObjectSource } = {},
): Promise<string> {
  const { id, secret, token } = randomBootstrapToken();
  await (deps.objects ?? storeObjects(env)).create("secrets", bootstrapTokenSecret(id, secret, o));
  return token;
}
