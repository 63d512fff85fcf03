import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Client, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

/** The bound: an attempt whose function ended has an outcome, or is given up, within 30 s. */
const OUTCOME_BOUND_MS = 30_000;

const returned = new Map<string, number>();

const keepsSecret = ax.task({ name: "keeps_secret", retries: 0 }, () => {
  returned.set(`${ax.context().runId}/keeps_secret`, Date.now());
  return { card: "SECRET-4242" };
});
const stubborn = ax.task({ name: "stubborn", retries: 1 }, () => {
  const { runId, attempt } = ax.context();
  returned.set(`${runId}/stubborn/${attempt}`, Date.now());
  return `done on attempt ${attempt}`;
});
const secretFlow = ax.flow({ name: "secret" }, () => {
  keepsSecret();
});
const stubbornFlow = ax.flow({ name: "stubborn" }, () => {
  stubborn();
});

/**
 * PostgreSQL itself refuses some outcome writes (a real statement error, not a mock):
 * - keeps_secret: its success;
 * - stubborn, attempt 1: every outcome but the takeover's (AxAttemptAbandonedError), so that
 *   only giving the attempt up is left to its worker.
 */
const REFUSE_OUTCOMES = `
create function refuse_outcomes() returns trigger language plpgsql as $$
begin
  if old.status = 'running' and (
       (new.node_key = 'keeps_secret' and new.status = 'success')
    or (new.node_key = 'stubborn' and old.attempt = 1
        and coalesce(new.error->>'name', '') <> 'AxAttemptAbandonedError')) then
    raise exception 'outcome write refused by the test' using errcode = 'P0001';
  end if;
  return new;
end $$;
create trigger refuse_outcomes before update on node_runs for each row execute function refuse_outcomes();`;

describe("an attempt's outcome is recorded within 30 s whatever happens to the write", () => {
  const env = isolate("outcome");
  let runtime: Runtime;
  let client: Client;

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [secretFlow, stubbornFlow] });
    await runtime.start();
    await env.sql(REFUSE_OUTCOMES);
    client = runtime.client();
  });

  afterAll(async () => {
    await runtime?.stop();
    await env.cleanup();
  });

  it("records a short failure, without the task's data, when the result's write is refused", async () => {
    const runId = await client.triggerFlow("secret", null);
    const run = await client.waitForRun(runId, { timeout: "45s" });
    expect(run.status).toBe("failed");
    const node = run.tasks[0]!;
    expect(node.status).toBe("failed");
    expect(node.error).toMatchObject({ name: "AxOutcomeNotRecordedError" });
    expect(node.error!.message).toContain("SQLSTATE P0001");
    expect(node.attempts).toHaveLength(1);
    expect(node.attempts[0]!.outcome).toBe("failed");
    expect(JSON.stringify(run)).not.toContain("SECRET-4242");
    const recordedAfter = new Date(node.attempts[0]!.finishedAt!).getTime() - returned.get(`${runId}/keeps_secret`)!;
    console.log(`short failure recorded ${recordedAfter} ms after the function returned`);
    expect(recordedAfter).toBeLessThan(OUTCOME_BOUND_MS);
  });

  it("gives the attempt up when nothing can be written, and the reconciler hands it on although the worker lives", async () => {
    const runId = await client.triggerFlow("stubborn", null);
    const run = await client.waitForRun(runId, { timeout: "90s" });
    expect(run.status).toBe("success");
    const [abandoned] = await env.sql<{ abandoned_at: Date | null }>(
      "select abandoned_at from attempts where run_id = $1 and node_key = 'stubborn' and n = 1",
      [runId],
    );
    const gaveUpAfter = abandoned!.abandoned_at!.getTime() - returned.get(`${runId}/stubborn/1`)!;
    console.log(`attempt given up ${gaveUpAfter} ms after the function returned`);
    expect(gaveUpAfter).toBeLessThanOrEqual(OUTCOME_BOUND_MS + 100);
    const node = run.tasks[0]!;
    expect(node.result).toBe("done on attempt 2");
    expect(node.attempts.map((a) => [a.n, a.outcome, a.error?.name ?? null])).toEqual([
      [1, "crashed", "AxAttemptAbandonedError"],
      [2, "success", null],
    ]);
    expect(node.attempts[0]!.worker).toBe(runtime.workerId);
    // Closed as crashed by the job handed back: counted, with its time until then as its duration.
    const metrics = await runtime.registry.metrics();
    expect(metrics).toMatch(/^ax_attempts_total\{task="stubborn",outcome="crashed"\} 1$/m);
    expect(metrics).toMatch(/^ax_attempt_duration_seconds_count\{task="stubborn",outcome="crashed"\} 1$/m);
  }, 120_000);
});
