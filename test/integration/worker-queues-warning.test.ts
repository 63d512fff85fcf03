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
