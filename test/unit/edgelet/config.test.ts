// edgelet's flags: --ca names a PEM file, as the usage line says.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../../agent/edgelet/config";

const dir = mkdtempSync(join(tmpdir(), "edgelet-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const base = ["--server", "https://127.0.0.1:1", "--token", "abcdef.0123456789abcdef"];

describe("edgelet config", () => {
  it("reads the CA bundle from the file --ca names", () => {
    const file = join(dir, "ca.crt");
    writeFileSync(file, PEM);
    expect(parseConfig([...base, "--ca", file]).ca).toBe(PEM);
  });

  it("takes PEM text given inline as it is", () => {
    expect(parseConfig([...base, `--ca=${PEM}`]).ca).toBe(PEM);
  });

  it("says which file it could not read", () => {
    expect(() => parseConfig([...base, "--ca", join(dir, "missing.crt")])).toThrow(
      /--ca .*missing\.crt: ENOENT/,
    );
  });
});
