import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { ax, type Client, type Runtime } from "ax-scheduler";
import { isolate, PG_URL } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

const echo = ax.task({ name: "nocoord_echo" }, (n: number) => n);
const echoFlow = ax.flow<number>({ name: "nocoord_flow" }, (n) => echo(n));

describe("a run triggered inside the caller's transaction while no coordinator runs", () => {
  const env = isolate("nocoord");
  const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
  let worker: Runtime;
  let coordinator: Runtime | undefined;
  let client: Client;

  beforeAll(async () => {
    worker = testRuntime(env, { flows: [echoFlow], roles: ["worker", "api"], port: 0 });
    await worker.start();
    client = worker.client();
  });

  afterAll(async () => {
    await coordinator?.stop();
    await worker?.stop();
    await pool.end();
    await env.cleanup();
  });

  it("says it waits for a coordinator (its job is not in Redis), and runs once one starts", async () => {
    const conn = await pool.connect();
    let runId: string;
    try {
      await conn.query("begin");
      runId = await client.triggerFlow("nocoord_flow", 5, { tx: conn });
      await conn.query("commit");
    } finally {
      conn.release();
    }
    const deadline = Date.now() + 10_000;
    let waitingFor: string | null = null;
    while (waitingFor === null) {
      if (Date.now() > deadline) throw new Error("the node never said why it waits");
      waitingFor = (await client.getRun(runId)).tasks[0]!.waitingFor;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(waitingFor).toBe("a coordinator: its job is not in Redis and no coordinator is running to queue it (start one: ax coordinator)");

    coordinator = testRuntime(env, { flows: [echoFlow], roles: ["coordinator"] });
    await coordinator.start();
    const done = await client.waitForRun(runId, { timeout: "20s" });
    expect(done.status).toBe("success");
    expect(done.tasks[0]!.waitingFor).toBeNull();
  });
});
