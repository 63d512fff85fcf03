import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

const env = isolate("loststart");
const executions: { runId: string; attempt: number }[] = [];

/**
 * What a PostgreSQL crash leaves when it loses an attempt's start (committed without waiting for
 * the disk) while the attempt runs: the node queued again at the same attempt, no attempt row,
 * the run pending. Written by the task itself, so the loss lands at a known moment.
 */
async function loseTheStart(runId: string): Promise<void> {
  await env.sql("update node_runs set status = 'queued', started_at = null where run_id = $1", [runId]);
  await env.sql("delete from attempts where run_id = $1", [runId]);
  await env.sql("update runs set status = 'pending', started_at = null where id = $1", [runId]);
}

const succeeds = ax.task({ name: "lost_start_succeeds" }, async () => {
  const { runId, attempt } = ax.context();
  executions.push({ runId, attempt });
  if (attempt === 1) await loseTheStart(runId);
  return "done";
});
const failsOnce = ax.task({ name: "lost_start_fails_once", retries: 1, retryBackoff: "100ms" }, async () => {
  const { runId, attempt } = ax.context();
  executions.push({ runId, attempt });
  if (attempt === 1) {
    await loseTheStart(runId);
    throw new Error("first attempt fails");
  }
  return "second";
});
const succeeding = ax.flow({ name: "lost_start_success" }, () => succeeds());
const retrying = ax.flow({ name: "lost_start_retry" }, () => failsOnce());

describe("an attempt whose start PostgreSQL lost while it ran", { timeout: 60_000 }, () => {
  let runtime: Runtime;

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [succeeding, retrying] });
    await runtime.start();
  });

  afterAll(async () => {
    await runtime?.stop({ timeout: 1 });
    await env.cleanup();
  });

  const attemptsOf = (runId: string) =>
    env.sql<{ n: number; outcome: string; worker: string; before: boolean }>(
      "select n, outcome, worker, started_at <= finished_at as before from attempts where run_id = $1 order by n",
      [runId],
    );

  it("keeps its success: the start is recorded again and the attempt does not run a second time", async () => {
    const client = runtime.client();
    const runId = await client.triggerFlow("lost_start_success", null);
    const run = await client.waitForRun(runId, { timeout: 20_000 });
    expect(run.status).toBe("success");
    expect(run.tasks[0]?.result).toBe("done");
    // Several reconciler passes (every 500 ms here): none may run the node again.
    await sleep(3000);
    expect(executions.filter((e) => e.runId === runId)).toEqual([{ runId, attempt: 1 }]);
    expect(await attemptsOf(runId)).toEqual([{ n: 1, outcome: "success", worker: runtime.workerId, before: true }]);
  });

  it("keeps its failure: the retry is scheduled as attempt 2, not attempt 1 again", async () => {
    const client = runtime.client();
    const runId = await client.triggerFlow("lost_start_retry", null);
    const run = await client.waitForRun(runId, { timeout: 20_000 });
    expect(run.status).toBe("success");
    expect(run.tasks[0]?.result).toBe("second");
    await sleep(2000);
    expect(executions.filter((e) => e.runId === runId).map((e) => e.attempt)).toEqual([1, 2]);
    expect((await attemptsOf(runId)).map((a) => [a.n, a.outcome])).toEqual([
      [1, "failed"],
      [2, "success"],
    ]);
  });
});
