import { afterAll, describe, expect, it } from "vitest";
import { isolate } from "../helpers/isolated.js";
import { runAx, startAx } from "../helpers/processes.js";

/** A mistyped `?schema=` names a new, empty history: whoever creates it says so. */
describe("a storage schema with no ax history", { timeout: 120_000 }, () => {
  const migrated = isolate("newschema");
  const served = isolate("newserved");

  afterAll(async () => {
    await migrated.cleanup();
    await served.cleanup();
  });

  it("ax migrate says the schema is new the first time only", async () => {
    const first = await runAx(["migrate", "--storage", migrated.storage]);
    expect(first.stdout).toContain(`migrations applied (pg, schema ${migrated.schema}, new: it had no ax history)`);
    const again = await runAx(["migrate", "--storage", migrated.storage]);
    expect(again.stdout.trim()).toBe(`migrations applied (pg, schema ${migrated.schema})`);
  });

  it("ax worker warns at start that it created a new, empty history, naming the schema", async () => {
    const worker = startAx(["worker", "test/fixtures/hello-flow.ts", "--storage", served.storage, "--prefix", served.prefix], {
      AX_LOG_LEVEL: "info",
    });
    try {
      await worker.waitFor(/ax worker started/, 60_000);
      const warning = worker
        .output()
        .split("\n")
        .find((line) => line.includes("had no ax history"));
      expect(JSON.parse(warning!)).toMatchObject({
        level: 40,
        schema: served.schema,
        msg: expect.stringContaining("check the schema name"),
      });
    } finally {
      await worker.stop();
    }
  });
});
