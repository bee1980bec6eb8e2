// Static bearer tokens (upstream's --token-auth-file), from the EDGEPLANE_TOKENS secret.
import type { UserInfo } from "../../api/user";
import { csvCells } from "./csv";
import { AUTHENTICATED, type TokenAuthenticator } from "./types";

export interface TokenEntry {
  token: string;
  user: UserInfo;
}

/**
 * Parses the token file (groups include system:authenticated, the shape the old filter had).
 * Lenient where upstream refuses the whole file: a line without a token or a user name is
 * skipped, so one bad line does not lock everybody out.
 */
export function parseTokenFile(text: string): TokenEntry[] {
  const out: TokenEntry[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const [token, name, uid, groups] = csvCells(line);
    if (!token || !name) continue;
    const gs = groups
      ? groups
          .split(",")
          .map((g) => g.trim())
          .filter(Boolean)
      : [];
    out.push({ token, user: { name, uid: uid ?? "", groups: [...gs, AUTHENTICATED] } });
  }
  return out;
}

let cached: { text: string; map: Map<string, UserInfo> } | undefined;

function tokenMap(text: string): Map<string, UserInfo> {
  if (cached?.text !== text)
    cached = { text, map: new Map(parseTokenFile(text).map((e) => [e.token, e.user])) };
  return cached.map;
}

/** A token in the file is this user; any other token is not this authenticator's. */
export const staticTokens: TokenAuthenticator = async (token, ctx) => {
  const text = ctx.env.EDGEPLANE_TOKENS;
  if (!text) return undefined;
  const user = tokenMap(text).get(token);
  return user ? structuredClone(user) : undefined;
};
