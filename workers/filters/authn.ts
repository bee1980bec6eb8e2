// Authentication: who is calling. Static bearer tokens (upstream's token file format, from
// the EDGEPLANE_TOKENS secret) for now; no credentials at all means system:anonymous,
// a credential that does not check out is 401.
import type { MiddlewareHandler } from "hono";
import { unauthorized } from "../../api/errors";
import type { AppEnv, UserInfo } from "../app-env";
import { internalUser } from "../internal";

export const ANONYMOUS: UserInfo = { name: "system:anonymous", uid: "", groups: ["system:unauthenticated"] };

interface TokenEntry {
  token: string;
  user: UserInfo;
}

/** Parses `token,user,uid,"group1,group2"` lines; blank lines and # comments are skipped. */
export function parseTokenFile(text: string): TokenEntry[] {
  const out: TokenEntry[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const cols: string[] = [];
    let cur = "";
    let quoted = false;
    for (const ch of line) {
      if (ch === '"') quoted = !quoted;
      else if (ch === "," && !quoted) {
        cols.push(cur);
        cur = "";
      } else cur += ch;
    }
    cols.push(cur);
    const [token, name, uid, groups] = cols.map((c) => c.trim());
    if (!token || !name) continue;
    const gs = groups
      ? groups
          .split(",")
          .map((g) => g.trim())
          .filter(Boolean)
      : [];
    out.push({ token, user: { name, uid: uid ?? "", groups: [...gs, "system:authenticated"] } });
  }
  return out;
}

let cached: { text: string; map: Map<string, UserInfo> } | undefined;

function tokenMap(text: string): Map<string, UserInfo> {
  if (cached?.text !== text) {
    cached = { text, map: new Map(parseTokenFile(text).map((e) => [e.token, e.user])) };
  }
  return cached.map;
}

export function authentication(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const internal = internalUser(c.req.raw);
    if (internal) {
      c.set("user", internal);
      return next();
    }
    const header = c.req.header("authorization");
    if (!header) {
      c.set("user", ANONYMOUS);
      return next();
    }
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!m) throw unauthorized();
    const user = tokenMap(c.env.EDGEPLANE_TOKENS ?? "").get(m[1]);
    if (!user) throw unauthorized();
    c.set("user", user);
    return next();
  };
}
