import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { migrate, openStore } from "@ax/store";
import { isolate } from "../helpers/isolated.js";
import { REPO_ROOT } from "../helpers/processes.js";

/**
 * Run in its own process, so that nothing the test runner loaded counts. The Redis URL leads
 * nowhere: a read of history must not need it.
 */
const READER = `
import { createRequire } from "node:module";
import { Client } from "ax-scheduler/client";
const client = new Client({ storage: process.env.STORAGE, redis: "redis://127.0.0.1:1", prefix: "lazy" });
const runs = await client.listRuns({ limit: 5 });
await client.close();
const loaded = new Set();
for (const file of Object.keys(createRequire(import.meta.url).cache)) {
  const name = /node_modules\\/((?:@[^/]+\\/)?[^/.][^/]*)\\/(?!.*node_modules)/.exec(file)?.[1];
  if (name) loaded.add(name);
}
console.log(JSON.stringify({ runs: runs.length, loaded: [...loaded] }));
`;

describe("a Client that only reads history", () => {
  const env = isolate("lazy_load");
  afterAll(() => env.cleanup());

  it("loads neither BullMQ, ioredis, prom-client nor yaml: a command such as `ax runs` starts without them", async () => {
    const store = openStore({ url: env.storage });
    await migrate(store);
    await store.close();
    const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", READER], {
      // Where an installed ax resolves `ax-scheduler` from: a package that depends on it.
      cwd: join(REPO_ROOT, "packages/cli"),
      env: { ...process.env, STORAGE: env.storage },
    });
    const { runs, loaded } = JSON.parse(stdout) as { runs: number; loaded: string[] };
    expect(runs).toBe(0);
    // pg is loaded, so the check sees what the process required.
    expect(loaded).toContain("pg");
    expect(loaded.filter((name) => ["bullmq", "ioredis", "prom-client", "yaml"].includes(name))).toEqual([]);
  });
});
