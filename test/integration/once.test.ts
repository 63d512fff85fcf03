import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { AxDefinitionError, Runtime, ax, type Client } from "ax-scheduler";
import { executorFlows } from "../fixtures/executor-tasks.js";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

const env = isolate("once");
/** The runtime's sessions carry this name, so pg_stat_activity shows exactly ours. */
const appName = env.schema;

/** Real executions of once-functions, counted in PostgreSQL (the test's schema). */
const effects = new pg.Pool({ connectionString: env.storage.split("?")[0], max: 4, options: `-c search_path=${env.schema}` });
effects.on("error", () => {});
const recordEffect = async (key: string) => {
  await effects.query("insert into once_effects (key) values ($1)", [key]);
};
const effectCount = async (key: string) =>
  (await effects.query<{ n: number }>("select count(*)::int as n from once_effects where key = $1", [key])).rows[0]!.n;

/**
 * Sessions of our runtime pinned on `once_keys`: holding a transaction open between statements, or
 * waiting on a row lock, in two samples 300 ms apart (a transaction between two of its statements
 * looks the same for an instant; the pinning this guards against lasts as long as `fn`).
 */
async function pinnedSessions(): Promise<{ pid: number; state: string; query: string }[]> {
  const sample = () =>
    env.sql<{ pid: number; state: string; query: string }>(
      `select pid, state, left(query, 100) as query from pg_stat_activity
       where application_name = $1 and query ilike '%once_keys%'
         and (state like 'idle in transaction%' or wait_event_type = 'Lock')`,
      [appName],
    );
  const first = await sample();
  await sleep(300);
  const second = new Set((await sample()).map((s) => s.pid));
  return first.filter((s) => second.has(s.pid));
}

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
}
function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
/** Resolved by a task when it reaches a point the test waits for, by name. */
const reached = new Map<string, Deferred>();
const point = (name: string) => reached.get(name) ?? reached.set(name, deferred()).get(name)!;

async function _waitUntil(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !(await check()); await sleep(50)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
  }
}

/** What each attempt got back from ax.once, by run id. */
const seen = new Map<string, { attempt: number; value: unknown }[]>();
const note = (value: unknown) => {
  const { runId, attempt } = ax.context();
  seen.set(runId, [...(seen.get(runId) ?? []), { attempt, value }]);
};

/** Charges once, then crashes on its first attempt: the retry must get the stored charge. */
const charge = ax.task({ name: "charge", retries: 2, retryBackoff: "50ms" }, async (order: { id: string }) => {
  const key = `charge:${order.id}`;
  const receipt = await ax.once(key, async () => {
    await recordEffect(key);
    return { chargeId: randomUUID(), amount: 99 };
  });
  note(receipt);
  if (ax.context().attempt === 1) throw new Error("crashed after charging");
  return receipt;
});

/** Slow once-function shared by concurrent runs through one key. */
const reserve = ax.task({ name: "reserve" }, async (input: { sku: string }) => {
  const key = `reserve:${input.sku}`;
  const reservation = await ax.once(key, async () => {
    await recordEffect(key);
    await sleep(300);
    return { reservation: randomUUID() };
  });
  note(reservation);
  return reservation;
});

/** The once-function itself fails the first time: nothing is stored, the retry runs it again. */
const flakyOnce = ax.task({ name: "flaky_once", retries: 1, retryBackoff: "50ms" }, async (input: { id: string }) => {
  const key = `flaky:${input.id}`;
  return ax.once(key, async () => {
    await recordEffect(key);
    if (ax.context().attempt === 1) throw new Error("payment API timed out");
    return "paid";
  });
});

/** The client a once-function uses from inside: the runtime the test is exercising. */
let clientInside: Client;
/** What the slow once-function saw through the database while it ran, by key. */
const inside = new Map<string, { status: string; triggered: string }>();

/** Reads its own run and triggers another from inside a 2 s once-function. */
const slowOnce = ax.task({ name: "slow_once", timeout: 20 }, async (input: { id: string }) => {
  const key = `slow:${input.id}`;
  return ax.once(key, async () => {
    const own = await clientInside.getRun(ax.context().runId);
    const triggered = await clientInside.triggerFlow("noop_flow", { from: key });
    inside.set(key, { status: own.status, triggered });
    point(key).resolve();
    await sleep(2000);
    return { slept: 2000 };
  });
});
const noop = ax.task({ name: "noop" }, (input: { from: string }) => input);

/** Holds its key until the test lets it go; a second run with the same key must wait for it. */
const release = deferred();
const holdOnce = ax.task({ name: "hold_once" }, async (input: { id: string }) => {
  const key = `hold:${input.id}`;
  point(`asked:${ax.context().runId}`).resolve();
  return ax.once(key, async () => {
    await recordEffect(key);
    point(key).resolve();
    await release.promise;
    return { holder: ax.context().runId };
  });
});

const chargeFlow = ax.flow({ name: "charge_flow" }, (order) => {
  charge(order);
});
const reserveFlow = ax.flow({ name: "reserve_flow" }, (input) => {
  reserve(input);
});
const flakyFlow = ax.flow({ name: "flaky_once_flow" }, (input) => {
  flakyOnce(input);
});
const slowFlow = ax.flow({ name: "slow_once_flow" }, (input) => {
  slowOnce(input as never);
});
const noopFlow = ax.flow({ name: "noop_flow" }, (input) => {
  noop(input as never);
});
const holdFlow = ax.flow({ name: "hold_once_flow" }, (input) => {
  holdOnce(input as never);
});
const onceExecutorFlows = executorFlows.filter((flow) => flow.name.startsWith("once_"));

describe("ax.once(key, fn)", () => {
  let runtime: Runtime;
  let client: Client;

  beforeAll(async () => {
    await env.sql("create table if not exists once_effects (key text not null, at timestamptz default now())");
    runtime = testRuntime(
      { ...env, storage: `${env.storage}&application_name=${appName}` },
      { flows: [chargeFlow, reserveFlow, flakyFlow, slowFlow, noopFlow, holdFlow, ...onceExecutorFlows], maxConcurrency: 8 },
    );
    await runtime.start();
    client = runtime.client();
    clientInside = client;
  });

  afterAll(async () => {
    release.resolve();
    await runtime?.stop();
    await effects.end();
    await env.cleanup();
  });

  it("runs fn once across retries: the retry gets the stored result", async () => {
    const runId = await client.triggerFlow("charge_flow", { id: "order-1" });
    const run = await client.waitForRun(runId, { timeout: "15s" });
    expect(run.status).toBe("success");
    const node = run.tasks[0]!;
    expect(node.attempts.map((a) => a.outcome)).toEqual(["failed", "success"]);
    expect(await effectCount("charge:order-1")).toBe(1);
    const [first, second] = seen.get(runId)!;
    expect(first!.attempt).toBe(1);
    expect(second!.attempt).toBe(2);
    expect(second!.value).toEqual(first!.value);
    expect(node.result).toEqual(first!.value);
    // Kept with its run, so that retention leaves the key of a run still retrying.
    const stored = await env.sql<{ result: unknown; run_id: string }>("select result, run_id from once_keys where key = 'charge:order-1'");
    expect(stored).toEqual([{ result: first!.value, run_id: runId }]);
  });

  it("runs fn once for concurrent runs with the same key; all get one result", async () => {
    const runIds = await Promise.all([1, 2, 3].map(() => client.triggerFlow("reserve_flow", { sku: "sku-7" })));
    const runs = await Promise.all(runIds.map((id) => client.waitForRun(id, { timeout: "15s" })));
    expect(runs.map((r) => r.status)).toEqual(["success", "success", "success"]);
    expect(await effectCount("reserve:sku-7")).toBe(1);
    const results = runs.map((r) => r.tasks[0]!.result);
    expect(results[1]).toEqual(results[0]);
    expect(results[2]).toEqual(results[0]);
    // They really overlapped: every run's attempt started before the first once-call committed.
    const starts = runs.map((r) => Date.parse(r.tasks[0]!.attempts[0]!.startedAt));
    const ends = runs.map((r) => Date.parse(r.tasks[0]!.attempts[0]!.finishedAt!));
    expect(Math.max(...starts)).toBeLessThan(Math.min(...ends));
  });

  it("holds no transaction while a slow fn runs: a run read and a trigger from inside fn work", async () => {
    const runId = await client.triggerFlow("slow_once_flow", { id: "pg" });
    await point("slow:pg").promise;
    // fn is now in its 2 s sleep: nothing of ours may sit in an open transaction meanwhile.
    expect(await pinnedSessions()).toEqual([]);
    const run = await client.waitForRun(runId, { timeout: "30s" });
    expect(run.status).toBe("success");
    expect(run.tasks[0]!.result).toEqual({ slept: 2000 });
    const seenInside = inside.get("slow:pg")!;
    expect(seenInside.status).toBe("running");
    expect((await client.waitForRun(seenInside.triggered, { timeout: "15s" })).status).toBe("success");
  });

  it("a concurrent attempt of a claimed key waits without a lock or transaction and gets the stored result", async () => {
    const holder = await client.triggerFlow("hold_once_flow", { id: "h1" });
    await point("hold:h1").promise;
    const waiter = await client.triggerFlow("hold_once_flow", { id: "h1" });
    await point(`asked:${waiter}`).promise;
    // Give the waiter time to poll a few times: it must neither run fn nor pin a session.
    await sleep(800);
    expect(await pinnedSessions()).toEqual([]);
    expect(await effectCount("hold:h1")).toBe(1);
    expect((await client.getRun(waiter)).status).toBe("running");

    release.resolve();
    const [held, waited] = await Promise.all([holder, waiter].map((id) => client.waitForRun(id, { timeout: "20s" })));
    expect(held!.status).toBe("success");
    expect(waited!.status).toBe("success");
    expect(held!.tasks[0]!.result).toEqual({ holder });
    expect(waited!.tasks[0]!.result).toEqual({ holder });
    expect(waited!.tasks[0]!.attempts).toHaveLength(1);
    expect(await effectCount("hold:h1")).toBe(1);
  });

  it("releases the claim when fn throws: the retry runs fn again at once", async () => {
    const run = await client.waitForRun(await client.triggerFlow("flaky_once_flow", { id: "p-1" }), { timeout: "15s" });
    expect(run.status).toBe("success");
    expect(run.tasks[0]!.result).toBe("paid");
    const [first, second] = run.tasks[0]!.attempts;
    expect([first!.outcome, second!.outcome]).toEqual(["failed", "success"]);
    // A claim left behind would make the retry wait for its lease (10 s) before running fn.
    expect(Date.parse(second!.finishedAt!) - Date.parse(first!.finishedAt!)).toBeLessThan(8000);
    expect(await effectCount("flaky:p-1")).toBe(2);
    expect(await env.sql("select key, result, claimed_by from once_keys where key = 'flaky:p-1'")).toEqual([
      { key: "flaky:p-1", result: "paid", claimed_by: null },
    ]);
  });

  it("takes over a claim whose holder died, once its lease has lapsed", async () => {
    const dead = "gone-run/reserve/1@dead-worker#0";
    await env.sql(
      `insert into once_keys (key, claimed_by, lease_until) values
       ('reserve:sku-lapsed', $1, now() - interval '1 minute'), ('reserve:sku-lapsing', $1, now() + interval '1500 milliseconds')`,
      [dead],
    );
    const [{ lease_until: leaseUntil }] = (await env.sql<{ lease_until: Date }>(
      "select lease_until from once_keys where key = 'reserve:sku-lapsing'",
    )) as [{ lease_until: Date }];
    const runIds = await Promise.all(["sku-lapsed", "sku-lapsing"].map((sku) => client.triggerFlow("reserve_flow", { sku })));
    const runs = await Promise.all(runIds.map((id) => client.waitForRun(id, { timeout: "30s" })));
    for (const [i, sku] of ["sku-lapsed", "sku-lapsing"].entries()) {
      const key = `reserve:${sku}`;
      expect(runs[i]!.status).toBe("success");
      expect(await effectCount(key)).toBe(1);
      const [row] = await env.sql<{ result: unknown; claimed_by: string | null; completed_at: Date | null }>(
        "select result, claimed_by, completed_at from once_keys where key = $1",
        [key],
      );
      expect(row).toMatchObject({ result: runs[i]!.tasks[0]!.result, claimed_by: null });
      expect(row!.completed_at).toBeInstanceOf(Date);
    }
    // The live-looking claim was respected until its lease lapsed (both times are PostgreSQL's).
    const [{ at }] = (await env.sql<{ at: Date }>("select at from once_effects where key = 'reserve:sku-lapsing'")) as [{ at: Date }];
    expect(at.getTime()).toBeGreaterThanOrEqual(leaseUntil.getTime());
  });

  for (const kind of ["thread", "process"] as const) {
    it(`works in a ${kind} child: the parent claims and stores, the retry gets attempt 1's result`, async () => {
      const key = `exec:${kind}`;
      const run = await client.waitForRun(await client.triggerFlow(`once_${kind}`, { key }), { timeout: "60s" });
      expect(run.status).toBe("success");
      const node = run.tasks[0]!;
      expect(node.attempts.map((a) => a.outcome)).toEqual(["failed", "success"]);
      const { attempt, stored } = node.result as { attempt: number; stored: { ranInAttempt: number; pid: number; isMainThread: boolean } };
      expect(attempt).toBe(2);
      expect(stored.ranInAttempt).toBe(1);
      if (kind === "thread") expect(stored.isMainThread).toBe(false);
      else expect(stored.pid).not.toBe(process.pid);
      expect(await env.sql("select result, claimed_by from once_keys where key = $1", [key])).toEqual([
        { result: stored, claimed_by: null },
      ]);
    }, 120_000);
  }

  it("throws AxDefinitionError outside a running task", async () => {
    await expect(ax.once("outside", () => 1)).rejects.toBeInstanceOf(AxDefinitionError);
    await expect(charge.run({ id: "unit" })).rejects.toThrow(/outside a running task/);
  });
});

describe("ax.once on embedded PGlite", () => {
  // Only the Redis prefix of `isolate()` is used; PostgreSQL is the embedded PGlite below.
  const redisEnv = isolate("once_pglite");
  const dataDir = mkdtempSync(join(tmpdir(), "ax-once-"));
  let runtime: Runtime;

  beforeAll(async () => {
    runtime = new Runtime({
      dataDir,
      redis: redisEnv.redis,
      prefix: redisEnv.prefix,
      flows: [slowFlow, noopFlow],
      roles: ["coordinator", "worker"],
      logLevel: process.env.AX_LOG_LEVEL ?? "warn",
      reconciler: { intervalMs: 500, staleMs: 1000, leaseMs: 3000 },
    });
    await runtime.start();
    clientInside = runtime.client();
    // PGlite compiles its WebAssembly and migrates on start: slow on a busy machine.
  }, 90_000);

  afterAll(async () => {
    await runtime?.stop();
    await redisEnv.cleanup();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("does not freeze the database while fn runs: a run read and a trigger from inside fn work", async () => {
    const client = runtime.client();
    const run = await client.waitForRun(await client.triggerFlow("slow_once_flow", { id: "pglite" }), { timeout: "40s" });
    expect(run.status).toBe("success");
    expect(run.tasks[0]!.result).toEqual({ slept: 2000 });
    const seenInside = inside.get("slow:pglite")!;
    expect(seenInside.status).toBe("running");
    expect((await client.waitForRun(seenInside.triggered, { timeout: "15s" })).status).toBe("success");
  });
});
