import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate, openStore, type Store } from "@ax/store";
import { isolate } from "../helpers/isolated.js";

const MIGRATION = new URL("../../packages/store/migrations/0029_rerun_root.sql", import.meta.url);

/** Migration 0029 gives reruns written before it the root their keys were read with. */
describe("migration 0029: rerun_root for reruns already stored", () => {
  const env = isolate("rerunroot");
  let store: Store;

  beforeAll(async () => {
    store = openStore({ url: env.storage });
    await migrate(store);
  });

  afterAll(async () => {
    await store?.close();
    await env.cleanup();
  });

  it("names each chain's first run, or the oldest link a pruned run left; plain runs keep null", async () => {
    const [a, b, c, d, e, f] = ["a", "b", "c", "d", "e", "f"].map((x) => `00000000-0000-7000-8000-00000000000${x}`);
    // a <- b <- c is whole; e reruns d, which retention pruned, and f reruns e.
    const rows: [string, string | null][] = [
      [a!, null],
      [b!, a!],
      [c!, b!],
      [e!, d!],
      [f!, e!],
    ];
    for (const [id, rerunOf] of rows) {
      await env.sql(
        `insert into runs (id, flow, flow_version_id, status, trigger, nodes_remaining, rerun_of)
         values ($1, 'old_flow', 1, 'success', $2, 0, $3)`,
        [id, rerunOf ? "rerun" : "manual", rerunOf],
      );
    }
    const backfill = readFileSync(MIGRATION, "utf8").split("--> statement-breakpoint").at(-1)!;
    await env.sql(backfill);
    const roots = await env.sql<{ id: string; rerun_root: string | null }>("select id, rerun_root from runs order by id");
    expect(Object.fromEntries(roots.map((r) => [r.id, r.rerun_root]))).toEqual({
      [a!]: null,
      [b!]: a,
      [c!]: a,
      [e!]: d,
      [f!]: d,
    });
  });
});
