import { describe, expect, it } from "vitest";
import { authenticateBasic, parseBasicHeader, parsePasswordFile } from "../../../workers/authn/basic";
import { csvCells } from "../../../workers/authn/csv";
import { parseTokenFile } from "../../../workers/authn/tokenfile";
import { AuthnFailure, safeEqual } from "../../../workers/authn/types";
import { authenticateClientCert, parseDN, userFromDN } from "../../../workers/authn/x509";
import { testEnv } from "./fake-objects";

const basic = (user: string, pass: string) => `Basic ${btoa(`${user}:${pass}`)}`;

describe("csv files", () => {
  it("splits quoted cells and doubled quotes", () => {
    expect(csvCells('pw,alice,1,"a,b"')).toEqual(["pw", "alice", "1", "a,b"]);
    expect(csvCells('"p""w",bob,2')).toEqual(['p"w', "bob", "2"]);
  });

  it("keeps the token file's old shape", () => {
    expect(parseTokenFile('# admins\ntok,admin,admin,"system:masters,x"\n\nbad\nt2,bob,')).toEqual([
      {
        token: "tok",
        user: { name: "admin", uid: "admin", groups: ["system:masters", "x", "system:authenticated"] },
      },
      { token: "t2", user: { name: "bob", uid: "", groups: ["system:authenticated"] } },
    ]);
  });

  it("reads the password file; fewer than 3 columns is an error; a later line wins", () => {
    const m = parsePasswordFile('pw1,alice,u1,"devs,ops"\npw2,bob,u2\npw3,alice,u3');
    expect(m.get("alice")).toEqual({ password: "pw3", user: { name: "alice", uid: "u3", groups: [] } });
    expect(m.get("bob")?.password).toBe("pw2");
    expect(() => parsePasswordFile("pw,alice")).toThrow("must have at least 3 columns");
  });
});

describe("basic auth", () => {
  const env = testEnv({ EDGEPLANE_BASIC_AUTH_FILE: 'secret,alice,u1,"devs,ops"' });

  it("authenticates the right password and refuses a wrong one or an unknown user", () => {
    expect(authenticateBasic(basic("alice", "secret"), env)).toEqual({
      name: "alice",
      uid: "u1",
      groups: ["devs", "ops"],
    });
    expect(() => authenticateBasic(basic("alice", "nope"), env)).toThrow(AuthnFailure);
    expect(() => authenticateBasic(basic("mallory", "secret"), env)).toThrow(AuthnFailure);
  });

  it("is off without a password file, and ignores non-Basic headers", () => {
    expect(authenticateBasic(basic("alice", "secret"), testEnv())).toBeUndefined();
    expect(authenticateBasic("Bearer abc", env)).toBeUndefined();
    expect(parseBasicHeader(`Basic ${btoa("u:p:q")}`)).toEqual({ user: "u", password: "p:q" });
    expect(parseBasicHeader("Basic !!!")).toBeUndefined();
  });

  it("compares in constant time but correctly", () => {
    expect(safeEqual("abc", "abc")).toBe(true);
    expect(safeEqual("abc", "abd")).toBe(false);
    expect(safeEqual("abc", "abcd")).toBe(false);
    expect(safeEqual("", "")).toBe(true);
  });
});

describe("x509 client certificates", () => {
  it("parses DNs: escapes, quotes, multi-valued RDNs", () => {
    expect(parseDN("CN=alice,O=devs,O=ops")).toEqual([
      { type: "CN", value: "alice" },
      { type: "O", value: "devs" },
      { type: "O", value: "ops" },
    ]);
    expect(parseDN('CN=Smith\\, John,O="a,b"+OU=x')).toEqual([
      { type: "CN", value: "Smith, John" },
      { type: "O", value: "a,b" },
      { type: "OU", value: "x" },
    ]);
    expect(userFromDN("CN=alice, O=system:masters, C=US")).toEqual({
      name: "alice",
      uid: "",
      groups: ["system:masters"],
    });
    expect(userFromDN("O=devs")).toBeUndefined();
  });

  const req = (tlsClientAuth: Record<string, string>) => {
    const r = new Request("https://x/api");
    Object.defineProperty(r, "cf", { value: { tlsClientAuth } });
    return r;
  };
  const on = testEnv({ EDGEPLANE_CLIENT_CERT_AUTH: "cloudflare" });
  const good = { certPresented: "1", certVerified: "SUCCESS", certSubjectDN: "CN=alice,O=devs,O=ops" };

  it("takes CN and O from a verified certificate", () => {
    expect(authenticateClientCert(req(good), on)).toEqual({
      name: "alice",
      uid: "",
      groups: ["devs", "ops"],
    });
  });

  it("ignores absent certificates, refuses unverified ones, and is off unless enabled", () => {
    expect(authenticateClientCert(req({ certPresented: "0", certVerified: "NONE" }), on)).toBeUndefined();
    expect(() =>
      authenticateClientCert(req({ ...good, certVerified: "FAILED:self signed certificate" }), on),
    ).toThrow(AuthnFailure);
    expect(authenticateClientCert(req(good), testEnv())).toBeUndefined();
    expect(authenticateClientCert(new Request("https://x/"), on)).toBeUndefined();
  });

  it("can require one issuer", () => {
    const e = testEnv({
      EDGEPLANE_CLIENT_CERT_AUTH: "cloudflare",
      EDGEPLANE_CLIENT_CA_ISSUER_DN: "CN=edgeplane-ca",
    });
    expect(authenticateClientCert(req({ ...good, certIssuerDNRFC2253: "CN=edgeplane-ca" }), e)?.name).toBe(
      "alice",
    );
    expect(() => authenticateClientCert(req({ ...good, certIssuerDNRFC2253: "CN=other" }), e)).toThrow(
      "unknown authority",
    );
  });

  it("believes the local front door only with the shared secret", () => {
    const e = testEnv({ EDGEPLANE_CLIENT_CERT_AUTH: "front", EDGEPLANE_FRONT_SECRET: "s3cret" });
    const r = (h: Record<string, string>) => new Request("https://x/", { headers: h });
    const subject = encodeURIComponent("CN=erin,O=devs");
    expect(
      authenticateClientCert(
        r({ "x-edgeplane-client-subject": subject, "x-edgeplane-front-secret": "s3cret" }),
        e,
      ),
    ).toEqual({
      name: "erin",
      uid: "",
      groups: ["devs"],
    });
    expect(() =>
      authenticateClientCert(
        r({ "x-edgeplane-client-subject": subject, "x-edgeplane-front-secret": "guess" }),
        e,
      ),
    ).toThrow(AuthnFailure);
    expect(() => authenticateClientCert(r({ "x-edgeplane-client-subject": subject }), e)).toThrow(
      AuthnFailure,
    );
    expect(authenticateClientCert(r({}), e)).toBeUndefined();
    const noSecret = testEnv({ EDGEPLANE_CLIENT_CERT_AUTH: "front" });
    expect(() =>
      authenticateClientCert(
        r({ "x-edgeplane-client-subject": subject, "x-edgeplane-front-secret": "" }),
        noSecret,
      ),
    ).toThrow(AuthnFailure);
  });
});
