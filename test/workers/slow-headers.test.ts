// The slow-header attack (issue 33, finding 2), short form: 30 connections/s without credentials,
// each trickling its head and never ending it, for 10 s. They used to take places in the front
// door's queue as soon as their request lines came, and /readyz and an admin's lists timed out
// for as long as they ran. Now an authenticated client's p99 stays under twice its quiet value,
// no node misses a lease renewal, and the probe and the client never time out. The full form
// (60 s) is `npm run bench slow-headers`.
import { describe, expect, it } from "vitest";
import { slowHeaderAttack } from "../../bench/lib/slow-headers";
import { ownServerForSuite } from "../helpers/own-server";

const server = ownServerForSuite();

describe("slow-header attack", () => {
  it("leaves an authenticated client's p99 under 2x its quiet value, and every lease renewal on time", async () => {
    const r = await slowHeaderAttack({
      url: server.url,
      token: server.token,
      quietSeconds: 8,
      attackSeconds: 10,
    });
    const figures = JSON.stringify(r);
    // the attack ran: connections were opened all along, and the front door closed them
    expect(r.attackers.opened, figures).toBeGreaterThanOrEqual(250);
    expect(r.attackers.closedByServer, figures).toBeGreaterThan(0);
    expect(r.attack.client.timeouts + r.attack.readyz.timeouts, figures).toBe(0);
    expect(r.attack.client.errors + r.attack.readyz.errors, figures).toBe(0);
    expect(r.attack.leases.missed, figures).toBe(0);
    expect(r.attack.leases.renewals, figures).toBeGreaterThanOrEqual(25);
    expect(r.attack.client.p99, figures).toBeLessThan(2 * r.quiet.client.p99);
  }, 120_000);
});
