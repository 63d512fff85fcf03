import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { ax, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

const heavy = ax.task({ name: "queues_warning_heavy", queue: "heavy" }, () => null);
const flow = ax.flow({ name: "queues_warning" }, () => {
  heavy();
});

describe("a worker told to serve a queue no task uses", () => {
  const env = isolate("queueswarn");
  let runtime: Runtime | undefined;

  afterAll(async () => {
    await runtime?.stop({ timeout: 1 });
    await env.cleanup();
  });

  it("starts, and warns that it runs nothing there (a typo in --queues)", async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
        done();
      },
    });
    runtime = testRuntime(env, { flows: [flow], roles: ["worker"], queues: ["heavy", "haevy"], logger: pino({ level: "warn" }, stream) });
    await runtime.start();
    const warned = lines.map((l) => JSON.parse(l) as { msg: string; queues?: string[] }).filter((l) => l.queues);
    expect(warned).toEqual([
      expect.objectContaining({
        queues: ["haevy"],
        msg: "no task of this process's flows is in queue haevy (they use heavy); this worker runs nothing there: it serves the queues its tasks are in when it starts, so a config version moving a task there takes effect when it restarts",
      }),
    ]);
  });
});

describe("a task moved to another queue in runtime.yaml while its workers run", () => {
  const env = isolate("queuemoved");
  let runtime: Runtime | undefined;

  afterAll(async () => {
    await runtime?.stop({ timeout: 1 });
    await env.cleanup();
  });

  it("waits saying the workers run it in its old queue until they restart, not that none defines it", async () => {
    runtime = testRuntime(env, { flows: [flow], roles: ["coordinator", "worker", "api"], port: 0, queues: ["heavy", "default"] });
    await runtime.start();
    const client = runtime.client();
    const applied = await client.config.apply("tasks:\n  queues_warning_heavy: { queue: default }\n", "runtime.yaml", "ops");
    const deadline = Date.now() + 5000;
    while (runtime.configVersion !== applied.version) {
      if (Date.now() > deadline) throw new Error("the config version was not applied within 5 s");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const runId = await client.triggerFlow("queues_warning", null);
    let waitingFor: string | null = null;
    while (waitingFor === null) {
      if (Date.now() > deadline + 10_000) throw new Error("the node never said why it waits");
      waitingFor = (await client.getRun(runId)).tasks[0]!.waitingFor;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(waitingFor).toBe(
      "no worker serves task queues_warning_heavy in queue default yet (live workers run it in heavy): restart workers with --queues default to pick up the queue from the configuration",
    );
  });
});
