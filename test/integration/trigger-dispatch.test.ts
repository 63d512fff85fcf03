import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { ax, Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { startPrivateRedis, type Child } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const echo = ax.task({ name: "dispatch_echo" }, (n: number) => n);
const echoFlow = ax.flow({ name: "dispatch_flow" }, (input) => echo(input as never));

/** The trigger's answer, or "no answer" once `ms` have passed. */
async function within<T>(promise: Promise<T>, ms: number): Promise<{ value: T } | { error: unknown } | "no answer"> {
  const answered = promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  return Promise.race([answered, sleep(ms).then(() => "no answer" as const)]);
}

describe("a trigger whose rows are committed succeeds whatever Redis does", () => {
  const env = isolate("dispatch");
  let server: { url: string; port: number; child: Child };
  let admin: Redis;
  let runtime: Runtime;
  let client: Client;

  beforeAll(async () => {
    server = await startPrivateRedis();
    admin = new Redis(server.url, { maxRetriesPerRequest: null });
    admin.on("error", () => {});
    // Outages of the private Redis make BullMQ and ioredis log connection errors: expected here.
    runtime = testRuntime({ ...env, redis: server.url }, { flows: [echoFlow], logLevel: "fatal" });
    await runtime.start();
    client = runtime.client();
  }, 90_000);

  afterAll(async () => {
    await runtime?.stop();
    admin?.disconnect();
    await server?.child.stop();
    await env.cleanup();
  });

  it("Redis refusing writes (OOM): every trigger of the batch resolves with its run, which runs once Redis has room", {
    timeout: 90_000,
  }, async () => {
    await admin.config("SET", "maxmemory-policy", "noeviction");
    await admin.config("SET", "maxmemory", "1");
    let runIds: string[];
    try {
      const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => within(client.triggerFlow("dispatch_flow", i), 10_000)));
      expect(answers.map((a) => (a !== "no answer" && "value" in a ? "resolved" : a))).toEqual(Array(5).fill("resolved"));
      runIds = answers.map((a) => (a as { value: string }).value);
    } finally {
      await admin.config("SET", "maxmemory", "0");
    }
    for (const id of runIds) expect(id).toMatch(UUID);
    const runs = await Promise.all(runIds.map((id) => client.waitForRun(id, { timeout: "60s" })));
    expect(runs.map((r) => r.status)).toEqual(Array(5).fill("success"));
  });

  it("Redis down: the trigger answers within 2 s with its run id, and the run starts when Redis is back", { timeout: 90_000 }, async () => {
    await server.child.stop();
    const started = Date.now();
    const answer = await within(client.triggerFlow("dispatch_flow", 42), 2000);
    const elapsed = Date.now() - started;
    // A short-lived producer (the CLI) closes right after: its job never reaches Redis, only the reconciler adds it.
    const producer = new Client({ storage: env.storage, redis: server.url, prefix: env.prefix });
    const fromProducer = await within(producer.triggerFlow("dispatch_flow", 43), 2000);
    await producer.close();
    // Reading the run needs PostgreSQL only: its queued node goes unexplained rather than the read hanging.
    const read = answer !== "no answer" && "value" in answer ? await within(client.getRun(answer.value as string), 3000) : answer;
    // Bring Redis back before asserting, so a failure leaves no test hanging on it.
    server = await startPrivateRedis(server.port);
    expect(read).toHaveProperty("value.tasks.0.status", "queued");
    expect(answer).not.toBe("no answer");
    expect(answer).toHaveProperty("value");
    expect(elapsed).toBeLessThan(2000);
    const runId = (answer as { value: string }).value;
    expect(runId).toMatch(UUID);
    const run = await client.waitForRun(runId, { timeout: "60s" });
    expect(run.status).toBe("success");
    expect(run.tasks[0]?.result).toBe(42);
    expect(fromProducer).toHaveProperty("value");
    const produced = await client.waitForRun((fromProducer as { value: string }).value, { timeout: "60s" });
    expect(produced.tasks[0]?.result).toBe(43);
  });
});
