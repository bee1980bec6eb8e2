// The pull records behind cached-image credential checks (agent/edgelet/image-pulls.ts): who may
// use an image the node holds, by what pulled it; persistent across restarts; no secret written.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ImagePullRecords, type PodCredential, repositoryOf } from "../../../agent/edgelet/image-pulls";

const IMAGE = "127.0.0.1:5001/private/busybox:1";
const REF = "sha256:0123";
const cred = (password: string, name = "regcred", uid = `uid-${name}`, namespace = "a"): PodCredential => ({
  auth: { username: "edgeplane", password, server_address: "http://127.0.0.1:5001" },
  secret: { namespace, name, uid },
});
const offer =
  (...c: PodCredential[]) =>
  async () =>
    c;

/** Every file under dir, recursively. */
function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)],
  );
}

describe("image pull records", () => {
  const dirs: string[] = [];
  const fresh = () => {
    const d = mkdtempSync(join(tmpdir(), "image-pulls-"));
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("names an image's repository without its tag or digest", () => {
    expect(repositoryOf(IMAGE)).toBe("127.0.0.1:5001/private/busybox");
    expect(repositoryOf("busybox")).toBe("busybox");
    expect(repositoryOf("busybox:1.36")).toBe("busybox");
    expect(repositoryOf("localhost:5000/x")).toBe("localhost:5000/x");
    expect(repositoryOf("a/b@sha256:abcd")).toBe("a/b");
    expect(repositoryOf("h:1/a/b:2@sha256:abcd")).toBe("h:1/a/b");
  });

  it("lets any pod use an image the agent did not pull, or pulled without credentials", async () => {
    const r = new ImagePullRecords(fresh());
    expect(await r.mayUse(IMAGE, REF, offer())).toBe(true); // preloaded
    r.intend(IMAGE);
    r.recordPull(IMAGE, REF, undefined);
    expect(await r.mayUse(IMAGE, REF, offer())).toBe(true);
    expect(r.intended(IMAGE)).toBe(false);
  });

  it("an image found present after a pull that recorded nothing is verified again", async () => {
    const r = new ImagePullRecords(fresh());
    r.intend(IMAGE); // the agent stopped between the pull and its record
    expect(await r.mayUse(IMAGE, REF, offer(cred("pw")))).toBe(false);
  });

  it("an image pulled with credentials is for pods with the same credentials or the same secret", async () => {
    const dir = fresh();
    const r = new ImagePullRecords(dir);
    r.intend(IMAGE);
    r.recordPull(IMAGE, REF, cred("pw"));
    expect(await r.mayUse(IMAGE, REF, offer())).toBe(false);
    expect(await r.mayUse(IMAGE, REF, offer(cred("wrong", "other")))).toBe(false);
    // the same credentials in another namespace's secret: yes, and remembered by that secret
    expect(await r.mayUse(IMAGE, REF, offer(cred("pw", "copy", "uid-copy", "b")))).toBe(true);
    // the same secret, updated in place: yes
    expect(await r.mayUse(IMAGE, REF, offer(cred("rotated")))).toBe(true);
    // another repository of the same content was never pulled with anything
    expect(await r.mayUse("127.0.0.1:5001/other/busybox:1", REF, offer(cred("pw")))).toBe(false);
    // kept across restarts: a new reader of the same directory decides the same
    const again = new ImagePullRecords(dir);
    expect(await again.mayUse(IMAGE, REF, offer())).toBe(false);
    expect(await again.mayUse(IMAGE, REF, offer(cred("pw", "copy", "uid-copy", "b")))).toBe(true);
    // the pod's secrets are not read when the answer does not need them
    let read = false;
    await again.mayUse(IMAGE, "sha256:preloaded", async () => {
      read = true;
      return [];
    });
    expect(read).toBe(false);
  });

  it("writes no secret, only keyed hashes, in files only root reads", () => {
    const dir = fresh();
    const r = new ImagePullRecords(dir);
    r.intend(IMAGE);
    r.recordPull(IMAGE, REF, cred("s3cret-password"));
    const all = files(dir);
    expect(all.length).toBeGreaterThanOrEqual(2);
    for (const f of all) {
      expect(readFileSync(f).toString("latin1")).not.toContain("s3cret-password");
      expect(statSync(f).mode & 0o077).toBe(0);
    }
    // the hash is keyed per node: another node's records hash the same secret differently
    expect(new ImagePullRecords(fresh()).hashOf(cred("pw").auth)).not.toBe(r.hashOf(cred("pw").auth));
  });
});
