// A state dir keeps the count of workerd processes its store shards were spread over
// (EDGEPLANE_ENGINE_PROCESSES): an object's owner is picked by its id among that many, so
// opening it with another count would lose objects, and is refused naming both.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { engineProcesses } from "../../../local-engine/devserver";
import { removeStateDir, tempStateDir } from "../../helpers/own-server";

const dirs: string[] = [];
const fresh = () => {
  const d = tempStateDir("edgeplane-count-");
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) removeStateDir(d);
});
// the suite may itself run with EDGEPLANE_ENGINE_PROCESSES set
const saved = process.env.EDGEPLANE_ENGINE_PROCESSES;
beforeEach(() => {
  delete process.env.EDGEPLANE_ENGINE_PROCESSES;
});
afterEach(() => {
  if (saved === undefined) delete process.env.EDGEPLANE_ENGINE_PROCESSES;
  else process.env.EDGEPLANE_ENGINE_PROCESSES = saved;
});

describe("engineProcesses", () => {
  it("records the count a state dir is made with and keeps it when none is asked", () => {
    const d = fresh();
    expect(engineProcesses(d, 3)).toBe(3);
    expect(readFileSync(join(d, "state", "engine-processes"), "utf8").trim()).toBe("3");
    expect(engineProcesses(d)).toBe(3);
    process.env.EDGEPLANE_ENGINE_PROCESSES = "3";
    expect(engineProcesses(d)).toBe(3);
  });

  it("refuses another count, naming the dir's", () => {
    const d = fresh();
    engineProcesses(d, 2);
    expect(() => engineProcesses(d, 1)).toThrow(
      `the state dir ${d} was made with EDGEPLANE_ENGINE_PROCESSES=2 and cannot be opened with 1`,
    );
    process.env.EDGEPLANE_ENGINE_PROCESSES = "4";
    expect(() => engineProcesses(d)).toThrow("was made with EDGEPLANE_ENGINE_PROCESSES=2");
  });

  it("takes a state dir from before the count was kept, holding store shards, as made with 1", () => {
    const d = fresh();
    const shards = join(d, "state", "v3", "do", "edgeplane-StoreShard");
    mkdirSync(shards, { recursive: true });
    writeFileSync(join(shards, `${"ab".repeat(32)}.sqlite`), "");
    expect(() => engineProcesses(d, 2)).toThrow("was made with EDGEPLANE_ENGINE_PROCESSES=1");
    expect(engineProcesses(d)).toBe(1);
  });

  it("defaults to 1 on machines with 2 cores or fewer", () => {
    const n = engineProcesses(fresh());
    if (availableParallelism() <= 2) expect(n).toBe(1);
    else expect(n).toBe(Math.min(8, Math.floor(availableParallelism() / 2)));
  });

  it("refuses a count that is not a whole number from 1 to 64", () => {
    process.env.EDGEPLANE_ENGINE_PROCESSES = "two";
    expect(() => engineProcesses(fresh())).toThrow(
      'EDGEPLANE_ENGINE_PROCESSES must be a whole number from 1 to 64, not "two"',
    );
    expect(() => engineProcesses(fresh(), 0)).toThrow('must be a whole number from 1 to 64, not "0"');
  });
});
