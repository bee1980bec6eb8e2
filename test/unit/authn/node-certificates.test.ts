// A node's client certificate is its agent's (workers/authn/node-certificates.ts): through
// Cloudflare's mTLS report (cf.tlsClientAuth, with certNotBefore in its own date format), a
// certificate from before the recorded agent joined, or once its Node is gone, is 401.
import { beforeEach, describe, expect, it } from "vitest";
import { StatusError } from "../../../api/errors";
import {
  certificateAgent,
  certificateAgentSince,
  newRecord,
  nodeOfCertificateUser,
} from "../../../api/node-binding";
import { authenticate } from "../../../workers/authn/index";
import { FakeObjects, testEnv } from "./fake-objects";

const env = { ...testEnv(), EDGEPLANE_CLIENT_CERT_AUTH: "cloudflare" };
let objects: FakeObjects;
beforeEach(() => {
  objects = new FakeObjects();
});

/** Cloudflare's date format for tlsClientAuth.certNotBefore */
const cfDate = (ms: number) => {
  const d = new Date(ms).toUTCString(); // "Sat, 05 Dec 2026 11:35:51 GMT"
  const [, day, mon, year, time] = d.split(" ");
  return `${mon} ${day} ${time} ${year} GMT`;
};

const withCert = (cn: string, notBefore: number) => {
  const r = new Request("https://x/api/v1/nodes/n1");
  Object.defineProperty(r, "cf", {
    value: {
      tlsClientAuth: {
        certPresented: "1",
        certVerified: "SUCCESS",
        certSubjectDN: `CN=${cn},O=system:nodes`,
        certNotBefore: cfDate(notBefore),
      },
    },
  });
  return r;
};

const code = (p: Promise<unknown>) =>
  p.then(
    () => 200,
    (e) => (e instanceof StatusError ? e.code : -1),
  );

describe("node client certificates", () => {
  it("the record's agent names when its certificates begin, in whole seconds", () => {
    const agent = certificateAgent(Date.parse("2026-12-05T11:35:51.447Z"));
    expect(agent).toBe("x509:2026-12-05T11:35:51.000Z");
    expect(certificateAgentSince(agent)).toBe(Date.parse("2026-12-05T11:35:51Z"));
    expect(certificateAgentSince("0b4c2d9e")).toBeUndefined();
    expect(nodeOfCertificateUser("system:node:n1", ["system:nodes"])).toBe("n1");
    expect(nodeOfCertificateUser("system:node:n1", ["devs"])).toBeUndefined();
  });

  it("are the recorded agent's from its join on, until its Node is deleted", async () => {
    const joined = Date.parse("2026-12-05T10:00:00Z");
    const node = objects.put("nodes", { metadata: { name: "n1" } });
    const record = newRecord("node-credential.n1", "n1", certificateAgent(joined), node.metadata.uid);
    objects.put("secrets", record);

    const ok = await authenticate(withCert("system:node:n1", joined), env, { objects });
    expect(ok?.name).toBe("system:node:n1");
    expect((await authenticate(withCert("system:node:n1", joined + 3600_000), env, { objects }))?.name).toBe(
      "system:node:n1",
    );
    // a certificate of the agent this one replaced
    expect(await code(authenticate(withCert("system:node:n1", joined - 60_000), env, { objects }))).toBe(401);
    // another node's certificate without a record is judged as upstream judges it
    expect((await authenticate(withCert("system:node:n2", joined - 60_000), env, { objects }))?.name).toBe(
      "system:node:n2",
    );
    // the Node deleted: revoked
    objects.remove("nodes", "", "n1");
    expect(await code(authenticate(withCert("system:node:n1", joined), env, { objects }))).toBe(401);
    // ... and replaced by another Node of that name: still revoked
    objects.put("nodes", { metadata: { name: "n1" } });
    expect(await code(authenticate(withCert("system:node:n1", joined), env, { objects }))).toBe(401);
  });
});
