// The admin token `npm start` writes once per state dir: kept across starts, readable by its
// owner only, and never starting with "-", which a command line would read as an option
// (edgelet --token <token> failed that way, now and then, with a base64url token).
import { statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../../agent/edgelet/config";
import { adminToken } from "../../../local-engine/devserver";
import { removeStateDir, tempStateDir } from "../../helpers/own-server";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) removeStateDir(d);
});

describe("admin token", () => {
  it("is made once per state dir, owner-only, and safe on a command line", () => {
    for (let i = 0; i < 20; i++) {
      const dir = tempStateDir("edgeplane-token-");
      dirs.push(dir);
      const token: string = adminToken(dir);
      expect(token).toMatch(/^[0-9a-f]{48}$/);
      expect(adminToken(dir)).toBe(token);
      expect(statSync(join(dir, "admin-token")).mode & 0o777).toBe(0o600);
      expect(parseConfig(["--server", "http://127.0.0.1:1", "--token", token]).token).toBe(token);
    }
  });
});
