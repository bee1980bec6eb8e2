// A node's client certificate is its agent's (api/node-binding.ts): when the node joined with
// a certificate, the record names the agent by when its certificates begin. A certificate of
// the node from before that (an agent since replaced), or once the Node it registered is deleted
// or replaced, no longer authenticates; as with node credentials (node-credentials.ts), deleting
// the Node revokes it. A node certificate with no record (signed with the CA outside the
// cluster, or issued before records existed) is judged by its signature and dates alone, as
// upstream's.
import { certificateAgentSince, nodeOfCertificateUser } from "../../api/node-binding";
import type { UserInfo } from "../../api/user";
import { bindingAndNode, bindNodeUID } from "./node-binding";
import { AuthnFailure, type TokenContext } from "./types";

/** Throws AuthnFailure when `user`'s certificate (valid from `notBefore`, ms) was revoked. */
export async function checkNodeCertificate(
  user: UserInfo,
  notBefore: number | undefined,
  ctx: TokenContext,
): Promise<void> {
  const node = nodeOfCertificateUser(user.name, user.groups);
  if (!node) return;
  const { binding, registered } = await bindingAndNode(ctx.objects, node);
  if (!binding) return;
  const since = certificateAgentSince(binding.agent);
  if (since === undefined || notBefore === undefined || notBefore < since)
    throw new AuthnFailure("node certificate revoked: another agent joined as this node");
  const uid = registered?.metadata?.uid ?? "";
  if (binding.nodeUID && binding.nodeUID !== uid)
    throw new AuthnFailure("node certificate revoked: its Node was deleted");
  if (!binding.nodeUID && uid) await bindNodeUID(ctx.env, binding, uid);
}
