import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";
import { untilMatches } from "../helpers/until.js";

const echo = ax.task({ name: "prefix_echo" }, (n: number) => n);
const echoFlow = ax.flow<number>({ name: "prefix_echo_flow" }, (n) => echo(n));

describe("a worker started on another Redis prefix than the runs' (a missing --prefix / AX_PREFIX)", () => {
  const env = isolate("prefixrun");
  // Only its prefix is used: the misconfigured worker shares env's history.
  const other = isolate("prefixwrk");
  let coordinator: Runtime;
  let strayWorker: Runtime;
  let rightWorker: Runtime | undefined;
  let client: Client;

  const lines: string[] = [];
  const logger = pino(
    { level: "warn" },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
        done();
      },
    }),
  );

  beforeAll(async () => {
    coordinator = testRuntime(env, { flows: [echoFlow], roles: ["coordinator", "api"], port: 0, logger });
    strayWorker = testRuntime({ ...env, prefix: other.prefix }, { flows: [echoFlow], roles: ["worker"] });
    await coordinator.start();
    await strayWorker.start();
    client = coordinator.client();
  });

  afterAll(async () => {
    await rightWorker?.stop();
    await strayWorker?.stop();
    await coordinator?.stop();
    await other.cleanup();
    await env.cleanup();
  });

  it("is named in waitingFor and ax queues instead of looking like a healthy worker, and the run goes on once a worker is on the prefix", async () => {
    const runId = await client.triggerFlow("prefix_echo_flow", 7);
    const reason = `no worker serves queue default on Redis prefix "${env.prefix}"; 1 worker serves it on "${other.prefix}": give every process the same --prefix (AX_PREFIX)`;
    const waiting = await untilMatches(
      "the node to say why it waits",
      async () => (await client.getRun(runId)).tasks[0]!,
      (task) => task.waitingFor !== null,
    );
    expect(waiting).toMatchObject({ status: "queued", waitingFor: reason });

    const [queue] = await client.listQueues();
    expect(queue).toMatchObject({ name: "default.prefix_echo", waiting: 1, workers: 0, limited: reason });

    // The coordinator says so in its log too: nothing else would, since such a node is left to wait.
    const warning = await untilMatches(
      "the coordinator's warning",
      async () => lines.map((l) => JSON.parse(l) as { msg: string }).find((l) => l.msg.includes("use another Redis prefix")),
      (found) => found !== undefined,
    );
    expect(warning!.msg).toContain(
      `live workers of this history use another Redis prefix than this coordinator's "${env.prefix}": 1 on "${other.prefix}"`,
    );
    expect(warning!.msg).toContain("Give every process the same --prefix (AX_PREFIX)");

    rightWorker = testRuntime(env, { flows: [echoFlow], roles: ["worker"] });
    await rightWorker.start();
    const done = await client.waitForRun(runId, { timeout: "15s" });
    expect(done.status).toBe("success");
    expect(done.tasks[0]!.result).toBe(7);
  });
});
