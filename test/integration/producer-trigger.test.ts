import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { sql } from "drizzle-orm";
import {
  AxNotInTransactionError,
  AxNotJsonError,
  AxRunNotFoundError,
  AxTransactionHandleError,
  AxTriggerOptionError,
  ax,
  Client,
  type Runtime,
  type RunInfo,
} from "ax-scheduler";
import { pino } from "pino";
import { isolate, PG_URL } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";
import { until } from "../helpers/until.js";

/** Start times of task bodies by run id: the worker runs in this process. */
const startedAt = new Map<string, number>();
const executionOrder: string[] = [];

const reserve = ax.task({ name: "reserve_stock" }, (order: { id: string }) => {
  startedAt.set(ax.context().runId, Date.now());
  return { reserved: order.id };
});
const confirm = ax.task({ name: "confirm_order" }, (r: { reserved: string }) => `confirmed ${r.reserved}`);
const orderFlow = ax.flow({ name: "order_created" }, (order) => {
  confirm(reserve(order));
});

/** Served by no worker of this file's main runtime: its jobs stay in Redis to be inspected. */
const parkedTask = ax.task({ name: "parked_step", queue: "parked" }, (x: unknown) => x);
const parkedFlow = ax.flow({ name: "parked_flow" }, (x) => {
  parkedTask(x);
});

const prioHead = ax.task({ name: "prio_head", queue: "prio" }, (p: { label: string }) => {
  executionOrder.push(p.label);
  return p.label;
});
const prioTail = ax.task({ name: "prio_tail", queue: "prio_tail" }, (label: string) => label);
const prioFlow = ax.flow({ name: "prio_flow" }, (p) => {
  prioTail(prioHead(p));
});

/** A chain on one task: with one worker slot, where a waiting run of higher priority fits in shows. */
const prioStep = ax.task({ name: "prio_step", queue: "prio_chain" }, async (p: { label: string; step: number }) => {
  executionOrder.push(`${p.label}:${p.step}`);
  if (p.label === "low" && p.step === 1) await new Promise((resolve) => setTimeout(resolve, 400));
  return { label: p.label, step: p.step + 1 };
});
const prioChain = ax.flow({ name: "prio_chain" }, (p) => {
  prioStep(prioStep(prioStep(p)));
});
const prioSingle = ax.flow({ name: "prio_single" }, (p) => {
  prioStep(p);
});

const env = isolate("producer");
let runtime: Runtime;
let client: Client;
let pool: pg.Pool;
let redis: Redis;
const queues: Queue[] = [];
const queue = (name: string) => {
  const q = new Queue(name, { connection: redis, prefix: env.prefix });
  queues.push(q);
  return q;
};
const firstJob = (q: Queue, runId: string, node: string) => q.getJob(`${runId}.${node}.1`);

beforeAll(async () => {
  runtime = testRuntime(env, {
    flows: [orderFlow, parkedFlow, prioFlow, prioChain, prioSingle],
    queues: ["default"],
    // The reconciler would rescue a run no listener enqueued: keep it out of the picture.
    reconciler: { intervalMs: 60_000, staleMs: 60_000, leaseMs: 60_000 },
  });
  await runtime.start();
  client = runtime.client();
  // The producer's own pool: its search_path is the default one, not ax's schema.
  pool = new pg.Pool({ connectionString: PG_URL, max: 4 });
  await pool.query(`create table "${env.schema}".orders (id text primary key)`);
  redis = new Redis(env.redis, { maxRetriesPerRequest: null });
});

afterAll(async () => {
  await Promise.all(queues.map((q) => q.close()));
  redis?.disconnect();
  await runtime?.stop({ timeout: 2 });
  await pool?.end();
  await env.cleanup();
});

async function orderExists(id: string): Promise<boolean> {
  return (await pool.query(`select 1 from "${env.schema}".orders where id = $1`, [id])).rowCount === 1;
}

describe("triggerFlow with { tx }: a pg client", () => {
  it("rolls back with the caller: no order, no run, no job", async () => {
    const conn = await pool.connect();
    let runId: string;
    try {
      await conn.query("begin");
      const pathBefore = (await conn.query("show search_path")).rows[0].search_path;
      await conn.query(`insert into "${env.schema}".orders (id) values ('o-rollback')`);
      runId = await client.triggerFlow("order_created", { id: "o-rollback" }, { tx: conn });
      // The caller's session is left as found.
      expect((await conn.query("show search_path")).rows[0].search_path).toBe(pathBefore);
      // Visible inside the caller's transaction, like its own writes.
      expect((await conn.query(`select status from "${env.schema}".runs where id = $1`, [runId])).rows[0]?.status).toBe("pending");
      await conn.query("rollback");
    } finally {
      conn.release();
    }
    await expect(client.getRun(runId)).rejects.toBeInstanceOf(AxRunNotFoundError);
    expect(await orderExists("o-rollback")).toBe(false);
    // A commit would have been announced within milliseconds; give a rollback ten times that.
    await new Promise((r) => setTimeout(r, 500));
    expect(await firstJob(queue("default.reserve_stock"), runId, "reserve_stock")).toBeUndefined();
  });

  it("commits with the caller: nothing is enqueued before the commit, the run executes after it", async () => {
    const conn = await pool.connect();
    let runId: string;
    try {
      await conn.query("begin");
      await conn.query(`insert into "${env.schema}".orders (id) values ('o-commit')`);
      runId = await client.triggerFlow("order_created", { id: "o-commit" }, { tx: conn });
      await new Promise((r) => setTimeout(r, 300));
      expect(await firstJob(queue("default.reserve_stock"), runId, "reserve_stock")).toBeUndefined();
      await expect(client.getRun(runId)).rejects.toBeInstanceOf(AxRunNotFoundError);
      await conn.query("commit");
    } finally {
      conn.release();
    }
    const run = await client.waitForRun(runId, { timeout: "20s" });
    expect(run.status).toBe("success");
    expect(run.tasks.find((t) => t.key === "confirm_order")?.result).toBe("confirmed o-commit");
    expect(await orderExists("o-commit")).toBe(true);
  });

  it("warns when an idempotency key comes back with another payload, in the transaction that made its run too", async () => {
    const warnings: { code: string; runId: string }[] = [];
    const logger = pino({ level: "warn" }, { write: (line: string) => void warnings.push(JSON.parse(line)) });
    const logged = new Client({ storage: env.storage, redis: env.redis, prefix: env.prefix, logger });
    const conn = await pool.connect();
    try {
      await conn.query("begin");
      const id = await logged.triggerFlow("parked_flow", { n: 1 }, { tx: conn, idempotencyKey: "tx-evt-1" });
      expect(await logged.triggerFlow("parked_flow", { n: 1 }, { tx: conn, idempotencyKey: "tx-evt-1" })).toBe(id);
      expect(warnings).toEqual([]);
      expect(await logged.triggerFlow("parked_flow", { n: 2 }, { tx: conn, idempotencyKey: "tx-evt-1" })).toBe(id);
      expect(warnings).toMatchObject([{ code: "AX_IDEMPOTENCY_KEY_REUSED", runId: id }]);
      await conn.query("commit");
      // A later transaction finds the committed run, and says the same.
      await conn.query("begin");
      const [again] = await logged.triggerFlows("parked_flow", [{ n: 1 }, { n: 3 }], { tx: conn, idempotencyKey: () => "tx-evt-1" });
      await conn.query("commit");
      expect(again).toBe(id);
      expect(warnings).toHaveLength(2);
      expect(warnings[1]).toMatchObject({ code: "AX_IDEMPOTENCY_KEY_REUSED", runId: id, count: 1 });
    } finally {
      conn.release();
      await logged.close();
    }
  });

  it("refuses a client outside a transaction and a pool, writing nothing", async () => {
    const conn = await pool.connect();
    try {
      await expect(client.triggerFlow("order_created", { id: "x" }, { tx: conn })).rejects.toBeInstanceOf(AxNotInTransactionError);
    } finally {
      conn.release();
    }
    await expect(client.triggerFlow("order_created", { id: "x" }, { tx: pool })).rejects.toBeInstanceOf(AxTransactionHandleError);
    expect(await client.listRuns({ flow: "order_created", businessKey: "x" })).toHaveLength(0);
  });

  it("leaves the caller's transaction usable when PostgreSQL refuses the run", async () => {
    await env.sql(`alter table runs add constraint test_no_refused check (business_key is distinct from 'refused')`);
    const conn = await pool.connect();
    try {
      await conn.query("begin");
      await conn.query(`insert into "${env.schema}".orders (id) values ('o-survives')`);
      await expect(client.triggerFlow("order_created", { id: "o-survives" }, { tx: conn, businessKey: "refused" })).rejects.toThrow();
      expect((await conn.query("show search_path")).rows[0].search_path).toBe('"$user", public');
      await conn.query("commit");
    } finally {
      conn.release();
      await env.sql(`alter table runs drop constraint test_no_refused`);
    }
    expect(await orderExists("o-survives")).toBe(true);
    expect(await client.listRuns({ businessKey: "refused" })).toHaveLength(0);
  });
});

describe("triggerFlow with { tx }: a drizzle transaction", () => {
  it("rolls back with the caller and commits with the caller", async () => {
    const db = drizzle(pool);
    let rolledBack = "";
    await expect(
      db.transaction(async (tx) => {
        await tx.execute(sql.raw(`insert into "${env.schema}".orders (id) values ('d-rollback')`));
        rolledBack = await client.triggerFlow("order_created", { id: "d-rollback" }, { tx });
        throw new Error("the caller changes its mind");
      }),
    ).rejects.toThrow("changes its mind");
    await expect(client.getRun(rolledBack)).rejects.toBeInstanceOf(AxRunNotFoundError);
    expect(await orderExists("d-rollback")).toBe(false);

    const committed = await db.transaction(async (tx) => {
      await tx.execute(sql.raw(`insert into "${env.schema}".orders (id) values ('d-commit')`));
      return client.triggerFlow("order_created", { id: "d-commit" }, { tx });
    });
    expect((await client.waitForRun(committed, { timeout: "20s" })).status).toBe("success");
    expect(await orderExists("d-commit")).toBe(true);
    expect(await firstJob(queue("default.reserve_stock"), rolledBack, "reserve_stock")).toBeUndefined();
  });
});

describe("commit -> dispatch latency", () => {
  it("enqueues the first job within 50 ms of the commit (p50)", async () => {
    const parked = queue("parked.parked_step");
    const dispatchMs: number[] = [];
    const startMs: number[] = [];
    for (let i = 0; i < 20; i++) {
      for (const [flow, sample] of [
        ["parked_flow", dispatchMs],
        ["order_created", startMs],
      ] as const) {
        const conn = await pool.connect();
        let runId: string;
        let committedAt: number;
        try {
          await conn.query("begin");
          runId = await client.triggerFlow(flow, { id: `lat-${flow}-${i}` }, { tx: conn });
          await conn.query("commit");
          committedAt = Date.now();
        } finally {
          conn.release();
        }
        if (flow === "parked_flow") {
          const job = await until("the parked step's job", () => firstJob(parked, runId, "parked_step"), { timeoutMs: 20_000, everyMs: 5 });
          sample.push(job.timestamp - committedAt);
        } else {
          await client.waitForRun(runId, { timeout: "20s" });
          sample.push(startedAt.get(runId)! - committedAt);
        }
      }
    }
    const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    console.log(
      `commit -> job in Redis p50 ${p50(dispatchMs)} ms (max ${Math.max(...dispatchMs)}); commit -> task start p50 ${p50(startMs)} ms (max ${Math.max(...startMs)})`,
    );
    expect(p50(dispatchMs)).toBeLessThanOrEqual(50);
  });
});

describe("triggerFlows", () => {
  it("writes 500 runs in one call, each with its own keys, ids in order", async () => {
    const payloads = Array.from({ length: 500 }, (_, i) => ({ id: `burst-${i}` }));
    const began = Date.now();
    const ids = await client.triggerFlows("order_created", payloads, {
      businessKey: (p) => (p as { id: string }).id,
      idempotencyKey: (p) => `evt-${(p as { id: string }).id}`,
    });
    const tookMs = Date.now() - began;
    expect(ids).toHaveLength(500);
    expect(new Set(ids).size).toBe(500);
    // One after the other: 500 waits polling at once load PostgreSQL more than the runs do, and on
    // a busy machine made this test a minute long.
    const runs: RunInfo[] = [];
    for (const id of ids) runs.push(await client.waitForRun(id, { timeout: "90s" }));
    runs.forEach((run, i) => {
      expect(run.status).toBe("success");
      expect(run.businessKey).toBe(`burst-${i}`);
      expect(run.idempotencyKey).toBe(`evt-burst-${i}`);
    });
    // The same events again (a redelivered batch) are the same runs.
    const again = await client.triggerFlows("order_created", [payloads[7], payloads[3]], {
      idempotencyKey: (p) => `evt-${(p as { id: string }).id}`,
    });
    expect(again).toEqual([ids[7], ids[3]]);
    console.log(`triggerFlows: 500 runs written and enqueued in ${tookMs} ms`);
  }, 120_000);

  it("refuses the whole batch when one payload is bad, writing nothing", async () => {
    const businessKey = (p: unknown) => (p as { id: string }).id;
    await expect(
      client.triggerFlows("order_created", [{ id: "fine" }, { id: "bad", amount: 10n }], { businessKey }),
    ).rejects.toBeInstanceOf(AxNotJsonError);
    expect(await client.listRuns({ businessKey: "fine" })).toHaveLength(0);
  });
});

describe("delay, runAt and priority", () => {
  it("holds a delayed run pending with its first job delayed until it is due", async () => {
    const runId = await client.triggerFlow("order_created", { id: "later" }, { delay: "1.5s" });
    const before = await client.getRun(runId);
    expect(before.status).toBe("pending");
    expect(before.tasks[0]!.status).toBe("queued");
    const dueAt = Date.parse(before.runAt!);
    expect(dueAt - Date.parse(before.createdAt)).toBeGreaterThan(1000);
    expect(before.waitingFor).toBe(`due at ${before.runAt}`);
    expect(before.tasks[0]!.waitingFor).toBe(`due at ${before.runAt}`);
    expect(before.tasks[1]!.waitingFor).toBeNull();
    expect(await (await firstJob(queue("default.reserve_stock"), runId, "reserve_stock"))!.getState()).toBe("delayed");
    const run = await client.waitForRun(runId, { timeout: "20s" });
    expect(run.status).toBe("success");
    expect(run.waitingFor).toBeNull();
    expect(Date.parse(run.tasks[0]!.startedAt!)).toBeGreaterThanOrEqual(dueAt - 50);
  });

  it("refuses bad timing options", async () => {
    await expect(client.triggerFlow("order_created", {}, { priority: 0 })).rejects.toBeInstanceOf(AxTriggerOptionError);
    // BullMQ takes 0 to 2,097,151: one more was once written to PostgreSQL and then refused by Redis, leaving the run queued.
    await expect(client.triggerFlow("order_created", {}, { priority: 2 ** 21 })).rejects.toBeInstanceOf(AxTriggerOptionError);
    expect((await client.getRun(await client.triggerFlow("order_created", {}, { priority: 2 ** 21 - 1 }))).priority).toBe(2 ** 21 - 1);
    await expect(client.triggerFlow("order_created", {}, { delay: "soon" })).rejects.toBeInstanceOf(AxTriggerOptionError);
    await expect(client.triggerFlow("order_created", {}, { delay: 1, runAt: new Date() })).rejects.toBeInstanceOf(AxTriggerOptionError);
  });

  it("gives every job of a run its priority, and workers serve the highest first", async () => {
    const runs = new Map<string, string>();
    for (const [label, priority] of [
      ["p5", 5],
      ["p1", 1],
      ["p3", 3],
    ] as const) {
      runs.set(label, await client.triggerFlow("prio_flow", { label }, { priority }));
    }
    expect((await client.getRun(runs.get("p1")!)).priority).toBe(1);
    const head = queue("prio.prio_head");
    for (const [label, runId] of runs) expect((await firstJob(head, runId, "prio_head"))!.opts.priority).toBe(Number(label.slice(1)));

    const worker = testRuntime(env, { flows: [prioFlow], roles: ["worker"], queues: ["prio"], maxConcurrency: 1 });
    await worker.start();
    try {
      const tail = queue("prio_tail.prio_tail");
      for (const [label, runId] of runs) {
        // The dependant's job, added by the worker, carries the run's priority too.
        const job = await until("the tail's job", () => firstJob(tail, runId, "prio_tail"), { timeoutMs: 20_000, everyMs: 5 });
        expect(job.opts.priority).toBe(Number(label.slice(1)));
      }
      expect(executionOrder).toEqual(["p1", "p3", "p5"]);
    } finally {
      await worker.stop({ timeout: 2 });
    }
  });

  it("a prioritised run's next node waits its turn in the queue instead of running on in its slot", async () => {
    const worker = testRuntime(env, { flows: [prioChain, prioSingle], roles: ["worker"], queues: ["prio_chain"], maxConcurrency: 1 });
    await worker.start();
    try {
      executionOrder.length = 0;
      const low = await client.triggerFlow("prio_chain", { label: "low", step: 1 }, { priority: 10 });
      await until("low:1 to run", async () => executionOrder.includes("low:1"), { timeoutMs: 20_000, everyMs: 5 });
      const high = await client.triggerFlows(
        "prio_single",
        [
          { label: "high", step: 1 },
          { label: "high", step: 1 },
        ],
        { priority: 1 },
      );
      for (const id of [low, ...high]) expect((await client.waitForRun(id, { timeout: "20s" })).status).toBe("success");
      expect(executionOrder).toEqual(["low:1", "high:1", "high:1", "low:2", "low:3"]);
    } finally {
      await worker.stop({ timeout: 2 });
    }
  });
});
