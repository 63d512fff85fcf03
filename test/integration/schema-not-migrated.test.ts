import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, AxSchemaNotMigratedError, Client } from "ax-scheduler";
import { createApiToken, openStore, type Store } from "@ax/store";
import { isolate } from "../helpers/isolated.js";

const noop = ax.task({ name: "unmigrated_noop" }, () => null);
const flow = ax.flow({ name: "unmigrated_flow" }, () => {
  noop();
});

/** The refusal says which schema and what to run, and never the statement or its parameters. */
function expectNotMigrated(error: unknown, schema: string): void {
  expect(error).toBeInstanceOf(AxSchemaNotMigratedError);
  const refused = error as AxSchemaNotMigratedError;
  expect(refused.schema).toBe(schema);
  expect(refused.message).toContain(`the database schema "${schema}" has no ax tables`);
  expect(refused.message).toContain("ax migrate --storage");
  expect(`${refused.message}\n${refused.stack}`).not.toMatch(/Failed query|params:|select |insert into|secret-marker/);
}

describe("a database schema that was never migrated", () => {
  const env = isolate("unmigrated");
  let client: Client;
  let store: Store;

  beforeAll(async () => {
    await env.sql("select 1"); // the schema exists, empty
    client = new Client({ storage: env.storage, redis: env.redis, prefix: env.prefix, flows: [flow] });
    store = openStore({ url: env.storage });
  });

  afterAll(async () => {
    await client?.close();
    await store?.close();
    await env.cleanup();
  });

  it("refuses a Client's reads and writes with AxSchemaNotMigratedError", async () => {
    const calls: [string, () => Promise<unknown>][] = [
      ["triggerFlow", () => client.triggerFlow("unmigrated_flow", { key: "secret-marker" })],
      ["getRun", () => client.getRun("0b5c1f5e-4a43-4a52-9d1e-3d2b1a0c9f11")],
      ["listRuns", () => client.listRuns({ flow: "secret-marker" })],
      ["getLogs", () => client.getLogs("0b5c1f5e-4a43-4a52-9d1e-3d2b1a0c9f11")],
      ["tokens.create", () => client.tokens.create({ name: "secret-marker", scope: "read" })],
      ["tokens.list", () => client.tokens.list()],
      ["audit", () => client.audit()],
    ];
    for (const [name, call] of calls) {
      const error = await call().then(
        () => new Error(`${name} succeeded`),
        (e: unknown) => e,
      );
      expectNotMigrated(error, env.schema);
    }
  });

  it("refuses the store's token creation (a transaction) the same way", async () => {
    const error = await createApiToken(store.db, { name: "secret-marker", scope: "admin" }, { name: "test" }).catch((e: unknown) => e);
    expectNotMigrated(error, env.schema);
  });
});
