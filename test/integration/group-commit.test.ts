import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ax, AxStoreError, AxTriggerOptionError, type Client, type Runtime } from "ax-scheduler";
import {
  createRuns,
  GroupCommit,
  isConnectionError,
  currentFlowVersion,
  migrate,
  openStore,
  registerFlowVersion,
  type CreatedRun,
  type FlowVersion,
  type NewRun,
  type Store,
} from "@ax/store";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

const echo = ax.task({ name: "gc_echo" }, (value: unknown) => value);
const echoFlow = ax.flow({ name: "gc_echo_flow" }, (input) => {
  echo(input);
});

/** Settles every promise, in order: the value, or the error it rejected with. */
const settle = <T>(promises: Promise<T>[]) =>
  Promise.all(
    promises.map((p) =>
      p.then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      ),
    ),
  );

describe("group commit: one bad item fails only itself", () => {
  const env = isolate("groupcommit");
  let store: Store;
  let runtime: Runtime;
  let client: Client;

  beforeAll(async () => {
    store = openStore({ url: env.storage });
    await env.sql("create table items (marker text primary key, body jsonb not null)");
    runtime = testRuntime(env, { flows: [echoFlow] });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
    await runtime?.stop();
    await store?.close();
    await env.cleanup();
  });

  /** Writes 60 runs through the hot-path write (one statement per batch, refused whole for one bad row); 4 are unstorable. */
  async function bisects(target: Store, flow: FlowVersion, count: (sql: string) => Promise<unknown[]>): Promise<void> {
    const batches = new GroupCommit<NewRun, CreatedRun>((runs) => createRuns(target.db, runs));
    const guilty = new Set([3, 17, 18, 41]);
    const runs: NewRun[] = Array.from({ length: 60 }, (_, i) => ({
      id: randomUUID(),
      flow,
      trigger: "manual",
      // jsonb refuses \u0000 and a lone surrogate although both are valid JSON text.
      payload: { marker: `marker-${i}`, text: guilty.has(i) ? (i % 2 ? "bad\u0000" : "half \ud83d") : "fine 😀" },
    }));
    const settled = await settle(runs.map((run) => batches.submit(run)));

    settled.forEach((outcome, i) => {
      if (!guilty.has(i)) {
        expect(outcome).toMatchObject({ value: { created: true, runId: runs[i]!.id } });
        return;
      }
      const error = (outcome as { error: unknown }).error;
      expect(error).toBeInstanceOf(AxStoreError);
      expect((error as AxStoreError).message).toMatch(/^PostgreSQL refused the statement: .*\(SQLSTATE 22P0\d\)$/);
      expect((error as Error).message).not.toMatch(/marker-|insert into|params/);
    });
    const stored = (await count("select payload->>'marker' as marker from runs where payload ? 'marker'")) as { marker: string }[];
    expect(stored.map((row) => row.marker).sort()).toEqual(
      runs
        .filter((_, i) => !guilty.has(i))
        .map((run) => (run.payload as { marker: string }).marker)
        .sort(),
    );
  }

  it("bisects a refused batch so that only the guilty items fail, each with PostgreSQL's words and nobody else's data", async () => {
    const flow = (await currentFlowVersion(store.db, "gc_echo_flow"))!;
    await bisects(store, flow, (text) => env.sql(text));
  });

  it("does the same on embedded PGlite", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "ax-groupcommit-"));
    const embedded = openStore({ dataDir });
    try {
      await migrate(embedded);
      const dag = (await currentFlowVersion(store.db, "gc_echo_flow"))!.dag;
      const flow = await registerFlowVersion(embedded.db, dag, "groupcommit-test");
      await bisects(embedded, flow, async (text) => ((await embedded.db.execute(text)) as unknown as { rows: unknown[] }).rows);
    } finally {
      await embedded.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
    // PGlite's first start (WASM, initdb, migrations) takes a while on a busy machine.
  }, 180_000);

  it("fails the whole batch at once with a connection error, which callers retry", async () => {
    let writes = 0;
    const unreachable = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
    const batches = new GroupCommit<number, number>(async () => {
      writes += 1;
      throw unreachable;
    });
    const settled = await settle(Array.from({ length: 20 }, (_, i) => batches.submit(i)));
    for (const outcome of settled) expect(isConnectionError((outcome as { error: unknown }).error)).toBe(true);
    // Two batches in flight at once (the first two submits), then the rest together: no splitting.
    expect(writes).toBeLessThanOrEqual(3);
  });

  it("a trigger with an idempotency key too long for its index fails alone; concurrent triggers succeed", async () => {
    // Random text does not compress: such a key once overflowed the btree row limit (about 2.7 kB)
    // inside a shared statement; since 0.8.0 the Client refuses it before anything is written.
    const tooLong = randomBytes(6000).toString("hex");
    const settled = await settle(
      Array.from({ length: 12 }, (_, i) =>
        client.triggerFlow("gc_echo_flow", { n: i, secret: `payload-${i}` }, { idempotencyKey: i === 7 ? tooLong : `key-${i}` }),
      ),
    );
    settled.forEach((outcome, i) => {
      if (i !== 7) {
        expect(outcome).toHaveProperty("value");
        return;
      }
      const error = (outcome as { error: Error }).error;
      expect(error).toBeInstanceOf(AxTriggerOptionError);
      expect(error.message).toContain("keys are at most 512");
      expect(error.message).not.toMatch(/payload-|Failed query|params/);
    });
    const runs = await Promise.all(
      settled.filter((o) => "value" in o).map((o) => client.waitForRun((o as { value: string }).value, { timeout: "30s" })),
    );
    expect(runs.map((run) => run.status)).toEqual(Array(11).fill("success"));
  });
});
