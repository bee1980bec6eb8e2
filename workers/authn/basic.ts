// HTTP basic auth from upstream's (since removed) password file: password,user,uid,"groups".
// Off unless EDGEPLANE_BASIC_AUTH_FILE holds the file. Passwords compare in constant time.
import type { UserInfo } from "../../api/user";
import { parseCredentialFile } from "./csv";
import { type AuthnEnv, AuthnFailure, safeEqual } from "./types";

export interface PasswordEntry {
  password: string;
  user: UserInfo;
}

/** The file by user name (a later line for the same user wins, as upstream). Throws on a line of < 3 columns. */
export function parsePasswordFile(text: string): Map<string, PasswordEntry> {
  const byUser = new Map<string, PasswordEntry>();
  for (const e of parseCredentialFile(text, "password"))
    byUser.set(e.user.name, { password: e.secret, user: e.user });
  return byUser;
}

let cached: { text: string; map: Map<string, PasswordEntry> } | undefined;

/** user:password from an `Authorization: Basic` value, or undefined when it is not one. */
export function parseBasicHeader(header: string): { user: string; password: string } | undefined {
  const m = /^basic\s+(\S+)\s*$/i.exec(header.trim());
  if (!m) return undefined;
  let text: string;
  try {
    const bin = atob(m[1]);
    text = new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
  } catch {
    return undefined;
  }
  const i = text.indexOf(":");
  if (i < 0) return undefined;
  return { user: text.slice(0, i), password: text.slice(i + 1) };
}

/**
 * The user for a Basic Authorization header; undefined when basic auth is off or the header
 * is not Basic; AuthnFailure when the user is unknown or the password is wrong.
 */
export function authenticateBasic(header: string, env: AuthnEnv): UserInfo | undefined {
  const text = env.EDGEPLANE_BASIC_AUTH_FILE;
  if (!text) return undefined;
  const creds = parseBasicHeader(header);
  if (!creds) return undefined;
  if (cached?.text !== text) cached = { text, map: parsePasswordFile(text) };
  const entry = cached.map.get(creds.user);
  // compare against something even for an unknown user, so both take the same time
  const ok = safeEqual(entry?.password ?? "\u0000unknown-user", creds.password);
  if (!entry || !ok) throw new AuthnFailure("invalid username/password combination");
  return structuredClone(entry.user);
}
