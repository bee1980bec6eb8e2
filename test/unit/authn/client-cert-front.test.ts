// The front door's side of client certificates (local-engine/client-cert.ts): judging a
// certificate against the client CAs, and rewriting a request head so that only the front
// door speaks for a certificate; and that a subject reported with escapes reads back as the
// same user and groups (a CN cannot smuggle in a group).
import { X509Certificate } from "node:crypto";
import { describe, expect, it } from "vitest";
import { subjectDN } from "../../../api/wire/client-cert";
import { clientCertJudge, refusal, rewriteHead } from "../../../local-engine/client-cert";
import { requestHead } from "../../../local-engine/fair-queue";
import { userFromDN } from "../../../workers/authn/x509";
import { clientCert, hasOpenssl, strangerCA } from "../../helpers/client-certs";

describe("subject DN on the wire", () => {
  it("reads back as the same user and groups, whatever characters they hold", () => {
    const cn = 'eve,O=system:masters+O=x;"\\ ';
    const groups = [" lead", "a,b", "#hash", "trail "];
    expect(userFromDN(subjectDN(cn, groups))).toEqual({ name: cn, uid: "", groups });
    expect(userFromDN(subjectDN("bob\\2C", []))?.name).toBe("bob\\2C");
  });
});

describe("rewriteHead", () => {
  const head = (text: string) => {
    const chunk = Buffer.from(text, "latin1");
    const end = chunk.indexOf("\r\n\r\n") + 4;
    return { chunk, end, lower: requestHead(chunk, end)!.headers };
  };

  it("drops the front door's headers a client sent, and leaves the body as it was", () => {
    const { chunk, end, lower } = head(
      "POST /x HTTP/1.1\r\nHost: a\r\nX-Edgeplane-Client-Subject: CN%3Dadmin\r\nx-edgeplane-front-secret : s\r\n" +
        "X-EDGEPLANE-CLIENT-CERT-ERROR: e\r\ncontent-length: 2\r\n\r\nhi",
    );
    const out = rewriteHead(chunk, end, lower, undefined);
    expect(out.chunk.toString("latin1")).toBe("POST /x HTTP/1.1\r\nHost: a\r\ncontent-length: 2\r\n\r\nhi");
    expect(out.chunk.subarray(out.end).toString()).toBe("hi");
  });

  it("adds a connection's identity after the request line", () => {
    const { chunk, end, lower } = head("GET /y HTTP/1.1\r\nHost: a\r\n\r\n");
    const identity = { headers: ["a", "1"], lines: Buffer.from("a: 1\r\n") };
    const out = rewriteHead(chunk, end, lower, identity);
    expect(out.chunk.toString()).toBe("GET /y HTTP/1.1\r\na: 1\r\nHost: a\r\n\r\n");
    expect(out.end).toBe(out.chunk.length);
  });

  it("leaves a head without either as it is (the same buffer)", () => {
    const { chunk, end, lower } = head("GET /z HTTP/1.1\r\nx-edgeplane-priority: p\r\n\r\n");
    expect(rewriteHead(chunk, end, lower, undefined).chunk).toBe(chunk);
  });
});

describe.skipIf(!hasOpenssl)("judging a certificate", () => {
  const ca = strangerCA("cluster-ca");
  const cas = [new X509Certificate(ca.cert)];
  const x = (pem: string) => new X509Certificate(pem);

  it("takes the CA's own, and refuses another CA's and an expired one", () => {
    expect(refusal(x(clientCert(ca, "u", ["g"]).cert), cas)).toBeUndefined();
    expect(refusal(x(clientCert(strangerCA(), "u").cert), cas)).toBe(
      "certificate signed by unknown authority",
    );
    expect(refusal(x(clientCert(ca, "u", [], -1).cert), cas)).toMatch(
      /^certificate has expired or is not yet valid/,
    );
    // the CA's own validity counts too
    const later = Date.now() + 365 * 24 * 3600 * 1000;
    expect(refusal(x(clientCert(ca, "u", [], 400).cert), cas, later)).toMatch(/expired/);
  });

  it("words the verdict for the Worker with the secret, and the subject as CN then O", () => {
    const judge = clientCertJudge(ca.cert, "s3");
    const good = clientCert(ca, "alice", ["devs", "ops"]);
    const peer = {
      getPeerCertificate: () => ({ raw: x(good.cert).raw, subject: { CN: "alice", O: ["devs", "ops"] } }),
    };
    const id = judge(peer as never)!;
    expect(id.headers).toEqual([
      "x-edgeplane-front-secret",
      "s3",
      "x-edgeplane-client-subject",
      encodeURIComponent("CN=alice,O=devs,O=ops"),
      "x-edgeplane-client-cert-not-before",
      new Date(Date.parse(x(good.cert).validFrom)).toISOString(),
    ]);
    expect(id.credential).toBe("x509 CN=alice,O=devs,O=ops");
    const bad = clientCert(strangerCA(), "mallory");
    const refused = judge({
      getPeerCertificate: () => ({ raw: x(bad.cert).raw, subject: { CN: "mallory" } }),
    } as never)!;
    expect(refused.credential).toBeUndefined();
    expect(refused.headers[2]).toBe("x-edgeplane-client-cert-error");
    expect(judge({ getPeerCertificate: () => ({}) } as never)).toBeUndefined();
    // a certificate judged before is not verified again while its dates hold
    const seen = (raw: Buffer, subject: object) => ({
      getPeerCertificate: () => ({ raw, subject, fingerprint256: "AA:BB" }),
    });
    const first = judge(seen(x(good.cert).raw, { CN: "alice", O: ["devs", "ops"] }) as never);
    // (the same fingerprint: the verdict kept, whatever the bytes now)
    expect(judge(seen(Buffer.from("not a certificate"), {}) as never)).toBe(first);
  });
});
