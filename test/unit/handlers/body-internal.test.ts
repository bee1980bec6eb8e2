// In-process requests' bodies (workers/internal.ts): the controllers' and the scheduler's
// writes are decoded from the text they were made with, their body stream never read back;
// a client's request is read from its stream as before, bad JSON worded the same either way.
import { describe, expect, it } from "vitest";
import { decodeBody, readText } from "../../../workers/encoding/request-body";
import { internalRequest } from "../../../workers/internal";

const USER = { name: "system:kube-scheduler", uid: "", groups: ["system:masters"] };
const BINDING =
  '{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p"},"target":{"kind":"Node","name":"n"}}';
const init = (body: string): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body,
});

describe("in-process request bodies", () => {
  it("are decoded from the text they were made with, the stream left unread", async () => {
    const req = internalRequest(USER, "http://internal/api/v1/namespaces/d/pods/p/binding", init(BINDING));
    const d = await decodeBody(req, "Binding");
    expect(d.value).toEqual(JSON.parse(BINDING));
    expect(req.bodyUsed).toBe(false);
    const patch = internalRequest(USER, "http://internal/api/v1/namespaces/d/events/e", init('{"count":2}'));
    expect(await readText(patch)).toBe('{"count":2}');
    expect(patch.bodyUsed).toBe(false);
  });

  it("of a client are read from the stream, and bad JSON is worded alike", async () => {
    const outside = new Request("http://x/api/v1/namespaces/d/pods/p/binding", init(BINDING));
    expect((await decodeBody(outside, "Binding")).value).toEqual(JSON.parse(BINDING));
    expect(outside.bodyUsed).toBe(true);
    const bad = '{"kind":"Binding",';
    const fromClient = await decodeBody(new Request("http://x/", init(bad)), "Binding").catch((e) => e);
    const fromInside = await decodeBody(internalRequest(USER, "http://x/", init(bad)), "Binding").catch(
      (e) => e,
    );
    expect(fromInside.message).toBe(fromClient.message);
    expect(fromInside.code).toBe(400);
  });
});
