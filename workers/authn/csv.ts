// The CSV files upstream reads for static tokens and (formerly) passwords:
// value,user,uid[,"group1,group2"]. Quoted cells may hold commas and "" for a quote.
import type { UserInfo } from "../../api/user";

/** Splits one CSV line into cells (RFC 4180 quoting). */
export function csvCells(line: string): string[] {
  const cells: string[] = [];
  let cur = "";
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (quoted) {
      if (ch === '"' && line[i + 1] === '"') {
        cur += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cur += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ",") {
      cells.push(cur);
      cur = "";
    } else cur += ch;
  }
  cells.push(cur);
  return cells.map((c) => c.trim());
}

export interface CredentialEntry {
  /** the token or the password */
  secret: string;
  user: UserInfo;
}

/**
 * Reads `secret,user,uid[,"group1,group2"]` lines; blank lines and # comments are skipped.
 * As upstream: fewer than three columns is an error, an empty secret is skipped, a later
 * line for the same key wins. Groups are as written (system:authenticated is added later).
 */
export function parseCredentialFile(text: string, what: "token" | "password"): CredentialEntry[] {
  const out: CredentialEntry[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const cells = csvCells(line);
    if (cells.length < 3)
      throw new Error(
        `${what} file must have at least 3 columns (${what}, user name, user uid), found ${cells.length}`,
      );
    const [secret, name, uid, groups] = cells;
    if (!secret) continue;
    const gs = groups
      ? groups
          .split(",")
          .map((g) => g.trim())
          .filter(Boolean)
      : [];
    out.push({ secret, user: { name, uid, groups: gs } });
  }
  return out;
}
