import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { ax, Client, type Runtime } from "ax-scheduler";
import { completeAttempts, migrate, openStore, startAttempts, type Store } from "@ax/store";
import pg from "pg";
import { isolate, PG_URL } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

const first = ax.task({ name: "plans_first" }, () => 1);
const second = ax.task({ name: "plans_second" }, (n: number) => n + 1);
const pair = ax.flow({ name: "plans_pair" }, () => {
  second(first());
});

const BACKLOG = 3000;
const PROBES = 20;

/**
 * The worker's start and completion statements are prepared, so each connection keeps the plan
 * PostgreSQL made after their first few runs. Made on a near-empty schema, such a plan could
 * read every queued node (through the in-flight partial index) or every node row (a hash join)
 * in each statement: cheap then, and as costly as the backlog or the history once they grow.
 * Reads are counted in PostgreSQL's own statistics, not timed.
 */
describe("hot statements read the rows they change, whatever the tables held when their plans were made", () => {
  const env = isolate("plans");
  let runtime: Runtime;
  let client: Client;
  let store: Store;

  beforeAll(async () => {
    // A Runtime registers the flow, then stops: no reconciler pass may read the backlog while
    // reads are counted. No worker either: the test plays its part through the store, on one
    // connection, so that every statement runs with the plans that connection cached.
    runtime = testRuntime(env, { flows: [pair], roles: ["coordinator"] });
    await runtime.start();
    await runtime.stop();
    client = new Client({ storage: env.storage, redis: env.redis, prefix: env.prefix });
    store = openStore({ url: env.storage, poolSize: 1 });
    await migrate(store);
  });

  afterAll(async () => {
    await store?.close();
    await client?.close();
    await env.cleanup();
  });

  const runFirstNode = async (runId: string) => {
    const [started] = await startAttempts(store.db, "plans-worker", [{ runId, nodeKey: "plans_first", attempt: 1, upstreamKeys: [] }]);
    expect(started).toBeDefined();
    const [advanced] = await completeAttempts(store.db, "plans-worker", [
      { runId, nodeKey: "plans_first", attempt: 1, result: 1, downstream: ["plans_second"] },
    ]);
    expect(advanced?.ready.map((n) => n.nodeKey)).toEqual(["plans_second"]);
  };

  /** Tuples read from node_runs and runs by scans and by the in-flight index, as PostgreSQL counted them. */
  const reads = async () => {
    // Statistics reach the shared counters when a backend goes idle, at most once a second unless forced.
    await store.db.execute(sql`select pg_stat_force_next_flush()`);
    const [row] = await env.sql<{ seq: string; in_flight: string }>(
      `select (select coalesce(sum(seq_tup_read), 0) from pg_stat_user_tables
                where schemaname = current_schema() and relname in ('node_runs', 'runs')) as seq,
              (select coalesce(sum(idx_tup_read), 0) from pg_stat_user_indexes
                where schemaname = current_schema() and indexrelname = 'node_runs_in_flight') as in_flight`,
    );
    return { seq: Number(row!.seq), inFlight: Number(row!.in_flight) };
  };

  it(`start and complete nodes of a ${BACKLOG}-run backlog reading no more than the rows they touch`, async () => {
    // Plans made while the tables are nearly empty (a prepared statement's plan is cached from its sixth run).
    for (let i = 0; i < 12; i++) await runFirstNode(await client.triggerFlow("plans_pair", null));

    const backlog = await client.triggerFlows(
      "plans_pair",
      Array.from({ length: BACKLOG }, () => null),
    );
    const before = await reads();
    for (const runId of backlog.slice(0, PROBES)) await runFirstNode(runId);
    const after = await reads();

    // Each probe touches a handful of rows; a plan that scanned would read the backlog (3,000
    // queued nodes, 6,000 node rows) in every statement, 40 statements here.
    expect(after.inFlight - before.inFlight).toBeLessThan(PROBES * 20);
    expect(after.seq - before.seq).toBeLessThan(PROBES * 50);
  });

  it("lookups of runs by business key and by a status other than success read their partial indexes", async () => {
    // With sequential scans priced out, a plan that does not name an index could not use it: both
    // are partial (business_key is not null; status <> 'success'), and each lookup must imply that.
    const db = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${env.schema} -c enable_seqscan=off` });
    await db.connect();
    try {
      const plan = async (text: string, values: unknown[] = []) =>
        (await db.query<{ "QUERY PLAN": string }>(`explain ${text}`, values)).rows.map((r) => r["QUERY PLAN"]).join("\n");
      expect(await plan("select id from runs where business_key = $1", ["order-1"])).toMatch(/runs_business_key/);
      expect(await plan("select id from runs where status = $1", ["failed"])).toMatch(/runs_status/);
      expect(await plan("select id from runs where status in ('pending', 'running')")).toMatch(/runs_status/);
      const indexes = (
        await db.query<{ indexname: string; indexdef: string }>("select indexname, indexdef from pg_indexes where schemaname = $1", [
          env.schema,
        ])
      ).rows;
      const where = (name: string) => indexes.find((i) => i.indexname === name)?.indexdef.replace(/.* WHERE /, "");
      expect(where("runs_business_key")).toBe("(business_key IS NOT NULL)");
      expect(where("runs_status")).toBe("(status <> 'success'::text)");
    } finally {
      await db.end();
    }
  });
});
