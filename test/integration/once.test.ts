import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { AxDefinitionError, ax, type Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

const env = isolate("once");

/** Real executions of once-functions, counted in PostgreSQL (the test's schema). */
const effects = new pg.Pool({ connectionString: env.storage.split("?")[0], max: 4, options: `-c search_path=${env.schema}` });
effects.on("error", () => {});
const recordEffect = async (key: string) => {
  await effects.query("insert into once_effects (key) values ($1)", [key]);
};
const effectCount = async (key: string) =>
  (await effects.query<{ n: number }>("select count(*)::int as n from once_effects where key = $1", [key])).rows[0]!.n;

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
    await new Promise((resolve) => setTimeout(resolve, 300));
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

const chargeFlow = ax.flow({ name: "charge_flow" }, (order) => {
  charge(order);
});
const reserveFlow = ax.flow({ name: "reserve_flow" }, (input) => {
  reserve(input);
});
const flakyFlow = ax.flow({ name: "flaky_once_flow" }, (input) => {
  flakyOnce(input);
});

describe("ax.once(key, fn)", () => {
  let runtime: Runtime;
  let client: Client;

  beforeAll(async () => {
    await env.sql("create table if not exists once_effects (key text not null, at timestamptz default now())");
    runtime = testRuntime(env, { flows: [chargeFlow, reserveFlow, flakyFlow], maxConcurrency: 8 });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
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
    const stored = await env.sql<{ result: unknown }>("select result from once_keys where key = 'charge:order-1'");
    expect(stored).toEqual([{ result: first!.value }]);
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

  it("stores nothing when fn throws: the next attempt runs fn again", async () => {
    const run = await client.waitForRun(await client.triggerFlow("flaky_once_flow", { id: "p-1" }), { timeout: "15s" });
    expect(run.status).toBe("success");
    expect(run.tasks[0]!.result).toBe("paid");
    expect(run.tasks[0]!.attempts.map((a) => a.outcome)).toEqual(["failed", "success"]);
    expect(await effectCount("flaky:p-1")).toBe(2);
    expect(await env.sql("select key, result from once_keys where key = 'flaky:p-1'")).toEqual([{ key: "flaky:p-1", result: "paid" }]);
  });

  it("throws AxDefinitionError outside a running task", async () => {
    await expect(ax.once("outside", () => 1)).rejects.toBeInstanceOf(AxDefinitionError);
    await expect(charge.run({ id: "unit" })).rejects.toThrow(/outside a running task/);
  });
});
