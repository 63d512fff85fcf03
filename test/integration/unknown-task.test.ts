import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ax, type AxEvent, type Runtime } from "ax-scheduler";
import { isolate, type Isolated } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";
import { until } from "../helpers/until.js";

/** The new release's flow: its task is unknown to workers of the old release. */
const newTask = ax.task({ name: "new_task" }, () => `ran on attempt ${ax.context().attempt}`);
const newFlow = ax.flow({ name: "release_2" }, () => {
  newTask();
});
/** The old release's workers serve the same queue but only know this task. */
const oldTask = ax.task({ name: "old_task" }, () => "old");
const oldFlow = ax.flow({ name: "release_1" }, () => {
  oldTask();
});

/** A flow whose last node only a worker of a later release could run: optional, by runtime.yaml. */
const servedStep = ax.task({ name: "served_step" }, () => "done");
const optionalNotice = ax.task({ name: "optional_notice" }, (_step: string) => "sent");
const withNotice = ax.flow({ name: "with_notice" }, () => {
  optionalNotice(servedStep());
});
const servedOnly = ax.flow({ name: "served_only" }, () => {
  servedStep();
});

function oldWorker(env: Isolated): Runtime {
  return testRuntime(env, { flows: [oldFlow], roles: ["worker"] });
}

/** A coordinator whose reconciler fails nodes nobody serves after `unknownTaskGraceMs`. */
function coordinator(env: Isolated, unknownTaskGraceMs = 600_000): Runtime {
  return testRuntime(env, {
    flows: [newFlow],
    roles: ["coordinator"],
    reconciler: { intervalMs: 500, staleMs: 1000, leaseMs: 3000, unknownTaskGraceMs },
  });
}

describe("a job whose task this worker does not define (rolling deploy)", () => {
  const envs: Isolated[] = [];
  const runtimes: Runtime[] = [];
  const started = async (runtime: Runtime) => {
    runtimes.push(runtime);
    await runtime.start();
    return runtime;
  };

  afterEach(async () => {
    for (const runtime of runtimes.splice(0).reverse()) await runtime.stop();
  });
  afterAll(async () => {
    for (const env of envs) await env.cleanup();
  });

  it("waits in its task's queue, consuming no attempt and saying why, until a worker that defines the task runs it as attempt 1", async () => {
    const env = isolate("unknown");
    envs.push(env);
    const client = (await started(coordinator(env))).client();
    await started(oldWorker(env));
    const runId = await client.triggerFlow("release_2", null);

    await until("the node to say why it waits", async () => (await client.getRun(runId)).tasks[0]!.waitingFor !== null, {
      timeoutMs: 10_000,
    });
    const waiting = await client.getRun(runId);
    expect(waiting.tasks[0]).toMatchObject({
      status: "queued",
      attempts: [],
      waitingFor: "no worker defines task new_task in queue default",
    });
    // The run, pending, says the same on itself with the node it is about.
    expect(waiting).toMatchObject({
      status: "pending",
      waitingFor: `no worker defines task new_task in queue default (${waiting.tasks[0]!.key})`,
    });

    await started(testRuntime(env, { flows: [newFlow], roles: ["worker"] }));
    const run = await client.waitForRun(runId, { timeout: "60s" });
    expect(run.status).toBe("success");
    expect(run.tasks[0]!.result).toBe("ran on attempt 1");
    expect(run.tasks[0]!.attempts.map((a) => [a.n, a.outcome])).toEqual([[1, "success"]]);
  });

  it("fails the node with AxUnknownTaskError once the grace period has passed with no such worker", async () => {
    const env = isolate("unknowngrace");
    envs.push(env);
    const graceMs = 3000;
    const client = (await started(coordinator(env, graceMs))).client();
    await started(oldWorker(env));
    const events: AxEvent[] = [];
    const unsubscribe = ax.onEvent((event) => {
      events.push(event);
    });
    const triggeredAt = Date.now();
    const runId = await client.triggerFlow("release_2", null);
    const run = await client.waitForRun(runId, { timeout: "30s" });
    const tookMs = Date.now() - triggeredAt;
    console.log(`node failed ${tookMs} ms after its trigger (grace ${graceMs} ms)`);
    expect(run.status).toBe("failed");
    const node = run.tasks[0]!;
    expect(node.error).toMatchObject({ name: "AxUnknownTaskError" });
    expect(node.attempts.map((a) => [a.n, a.outcome])).toEqual([[1, "failed"]]);
    expect(node.error!.message).toContain('task "new_task" in queue "default"');
    expect(tookMs).toBeGreaterThanOrEqual(graceMs);
    // Alerts hear of it as of any other final failure: the task's, then the run's naming the node.
    await until("run_failed", async () => events.some((e) => e.runId === runId && e.name === "run_failed"), { timeoutMs: 10_000 });
    unsubscribe();
    const failures = events.filter((e) => e.runId === runId && (e.name === "task_failed" || e.name === "run_failed"));
    expect(failures).toMatchObject([
      { name: "task_failed", flow: "release_2", task: "new_task", nodeKey: node.key, attempt: 1, error: { name: "AxUnknownTaskError" } },
      { name: "run_failed", flow: "release_2", nodeKey: node.key, error: { name: "AxUnknownTaskError" } },
    ]);
  });

  it("counts an unserved notify_only node as a worker would: its run succeeds, its alert goes to its group (both set in runtime.yaml)", async () => {
    const env = isolate("unservednotice");
    envs.push(env);
    const file = join(tmpdir(), `${env.prefix}-runtime.yaml`);
    writeFileSync(file, "tasks:\n  optional_notice: { on_failure: notify_only, alert_group: ops }\n");
    try {
      const client = (
        await started(
          testRuntime(env, {
            flows: [withNotice],
            roles: ["coordinator"],
            config: file,
            reconciler: { intervalMs: 500, staleMs: 1000, leaseMs: 3000, unknownTaskGraceMs: 3000 },
          }),
        )
      ).client();
      await started(testRuntime(env, { flows: [servedOnly], roles: ["worker"] }));
      const events: AxEvent[] = [];
      const unsubscribe = ax.onEvent((event) => {
        events.push(event);
      });
      const runId = await client.triggerFlow("with_notice", null);
      const run = await client.waitForRun(runId, { timeout: "30s" });
      expect(run.status).toBe("success");
      expect(run.tasks.map((t) => [t.key, t.status, t.error?.name ?? null])).toEqual([
        ["served_step", "success", null],
        ["optional_notice", "failed", "AxUnknownTaskError"],
      ]);
      await until("task_failed", async () => events.some((e) => e.runId === runId && e.name === "task_failed"), { timeoutMs: 10_000 });
      await until("run_succeeded", async () => events.some((e) => e.runId === runId && e.name === "run_succeeded"), { timeoutMs: 10_000 });
      unsubscribe();
      expect(events.find((e) => e.runId === runId && e.name === "task_failed")).toMatchObject({
        task: "optional_notice",
        alertGroup: "ops",
      });
      expect(events.some((e) => e.runId === runId && e.name === "run_failed")).toBe(false);
    } finally {
      rmSync(file, { force: true });
    }
  });
});
