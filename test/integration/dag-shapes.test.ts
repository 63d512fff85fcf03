import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

const calls: string[] = [];

const source = ax.task({ name: "source" }, (n: number) => n);
const addOne = ax.task({ name: "add_one" }, (n: number) => n + 1);
const sum = ax.task({ name: "sum" }, (...values: number[]) => values.reduce((a, b) => a + b, 0));
const scale = ax.task({ name: "scale" }, (n: number, factor: number, label: string) => ({ label, value: n * factor }));
const boom = ax.task({ name: "boom" }, (): number => {
  calls.push("boom");
  throw new TypeError("the invoice template is missing");
});
const never = ax.task({ name: "never" }, (n: number) => {
  calls.push("never");
  return n;
});

const diamond = ax.flow({ name: "diamond" }, (input) => {
  const a = source(input);
  const b = addOne(a);
  const c = addOne(a);
  sum(b, c);
});

const fanOut = ax.flow({ name: "fan_out_50" }, (input) => {
  const a = source(input);
  for (let i = 0; i < 50; i++) scale(a, i, `leaf-${i}`);
});

const fanIn = ax.flow({ name: "fan_in_50" }, () => {
  const leaves = Array.from({ length: 50 }, (_, i) => source(i));
  sum(...leaves);
});

const failing = ax.flow({ name: "failing" }, (input) => {
  const a = source(input);
  const b = boom();
  never(b);
  addOne(a);
});

describe("DAG shapes on real Redis and PostgreSQL", () => {
  const env = isolate("dag");
  let runtime: Runtime;
  let client: Client;

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [diamond, fanOut, fanIn, failing], maxConcurrency: 20 });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
    await runtime?.stop();
    await env.cleanup();
  });

  it("runs a diamond: the fan-in waits for both branches", async () => {
    const run = await client.waitForRun(await client.triggerFlow("diamond", 1), { timeout: "20s" });
    expect(run.status).toBe("success");
    expect(run.tasks.map((t) => [t.key, t.status, t.result])).toEqual([
      ["source", "success", 1],
      ["add_one", "success", 2],
      ["add_one#2", "success", 2],
      ["sum", "success", 4],
    ]);
    expect(run.tasks.every((t) => t.attempts.length === 1 && t.attempts[0]!.outcome === "success")).toBe(true);
  });

  it("fans out to 50 nodes, passing constants as arguments", async () => {
    const run = await client.waitForRun(await client.triggerFlow("fan_out_50", 3), { timeout: "30s" });
    expect(run.status).toBe("success");
    expect(run.tasks).toHaveLength(51);
    const leaf7 = run.tasks.find((t) => t.key === "scale#8");
    expect(leaf7?.result).toEqual({ label: "leaf-7", value: 21 });
  });

  it("fans in 50 nodes into one", async () => {
    const run = await client.waitForRun(await client.triggerFlow("fan_in_50", null), { timeout: "30s" });
    expect(run.status).toBe("success");
    expect(run.tasks.find((t) => t.key === "sum")?.result).toBe((49 * 50) / 2);
  });

  it("returns the existing run for a repeated idempotency key and writes nothing", async () => {
    const first = await client.triggerFlow("diamond", 5, { idempotencyKey: "order-42" });
    const second = await client.triggerFlow("diamond", 5, { idempotencyKey: "order-42" });
    expect(second).toBe(first);
    const rows = await env.sql<{ n: number }>("select count(*)::int as n from runs where idempotency_key = 'order-42'");
    expect(rows[0]!.n).toBe(1);
    expect((await client.waitForRun(first)).status).toBe("success");
  });

  it("fails the node that throws, skips its dependants, lets other branches finish, fails the run", async () => {
    const run = await client.waitForRun(await client.triggerFlow("failing", 1), { timeout: "20s" });
    expect(run.status).toBe("failed");
    const byKey = Object.fromEntries(run.tasks.map((t) => [t.key, t]));
    expect(byKey.boom!.status).toBe("failed");
    expect(byKey.boom!.error).toMatchObject({ name: "TypeError", message: "the invoice template is missing" });
    expect(byKey.boom!.attempts).toHaveLength(1);
    expect(byKey.boom!.attempts[0]).toMatchObject({ outcome: "failed", error: { name: "TypeError" } });
    expect(byKey.boom!.attempts[0]!.error!.stack).toContain("the invoice template is missing");
    expect(byKey.never!.status).toBe("skipped");
    expect(byKey.add_one!.status).toBe("success");
    expect(calls).not.toContain("never");
  });

  it("lists runs by flow and status", async () => {
    const runs = await client.listRuns({ flow: "failing", status: "failed" });
    expect(runs.length).toBeGreaterThanOrEqual(1);
    expect(runs.every((r) => r.flow === "failing" && r.status === "failed")).toBe(true);
    const either = await client.listRuns({ status: ["failed", "success"] });
    expect(either.map((r) => r.id)).toEqual(expect.arrayContaining(runs.map((r) => r.id)));
    expect(new Set(either.map((r) => r.status))).toEqual(new Set(["failed", "success"]));
  });
});
