import { afterAll, describe, expect, it } from "vitest";
import { AxConfigError, AxFlowInUseError, AxUnknownFlowError, Client, ax, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { runAx } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";

const shared = ax.task({ name: "retire_shared" }, (n: number) => n + 1);
const keptOnly = ax.task({ name: "retire_kept_step" }, (n: number) => n * 2);
const goneOnly = ax.task({ name: "retire_gone_step" }, (n: number) => n * 3);
const kept = ax.flow({ name: "retire_kept" }, (n) => {
  keptOnly(shared(n));
});
const gone = ax.flow({ name: "retire_gone", schedule: "0 3 * * *" }, (n) => {
  goneOnly(shared(n));
});

const lateOnly = ax.task({ name: "retire_late_step" }, (n: number) => n * 5);
const late = ax.flow({ name: "retire_late" }, (n) => {
  lateOnly(n);
});

const refusal = async (promise: Promise<unknown>) => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(Error);
  return error as Error;
};

describe("retiring a flow whose code is gone", () => {
  const env = isolate("retire");
  const started: Runtime[] = [];
  const client = new Client({ storage: env.storage, redis: env.redis, prefix: env.prefix });

  afterAll(async () => {
    await Promise.all(started.map((r) => r.stop({ timeout: "2s" })));
    await client.close();
    await env.cleanup();
  });

  const start = async (flows: (typeof kept)[], roles?: ("coordinator" | "worker" | "api")[]) => {
    const runtime = testRuntime(env, { flows, ...(roles ? { roles, port: 0 } : {}) });
    started.push(runtime);
    await runtime.start();
    return runtime;
  };
  /** What the ten seconds after a registration look like, without waiting them out. */
  const registeredLongAgo = () => env.sql("update flow_settings set updated_at = now() - interval '1 minute'");

  it("is refused while a process defines it, a run is unfinished or the config names it; then it takes no new runs", async () => {
    const old = await start([kept, gone]);
    const done = await client.waitForRun(await client.triggerFlow("retire_gone", 1), { timeout: "20s" });
    expect(done.status).toBe("success");
    const waiting = await client.triggerFlow("retire_gone", 2, { delay: "1h" });

    const defined = await refusal(client.retireFlow("retire_gone"));
    expect(defined).toBeInstanceOf(AxFlowInUseError);
    expect(defined.message).toMatch(/the code of 1 live process\(es\) defines it, or may: .*\(\S+ pid \d+\)\. Deploy code without it/);

    // The new deploy no longer has the flow; the old process is gone.
    await old.stop({ timeout: "2s" });
    await start([kept]);
    const states = await client.listFlows();
    expect(states.map((f) => [f.name, f.version, f.nodes, f.definedBy, f.unfinishedRuns, f.retiredAt])).toEqual([
      ["retire_gone", 1, 2, 0, 1, null],
      ["retire_kept", 1, 2, 1, 0, null],
    ]);
    expect(states[0]!.lastRunAt!.getTime()).toBeGreaterThan(Date.now() - 60_000);
    const listed = await runAx(["flows", "--storage", env.storage, "--prefix", env.prefix]);
    expect(listed.stdout.split("\n")[0]).toMatch(/^FLOW +VERSION +NODES +DEFINED BY +LAST RUN +UNFINISHED +STATE$/);
    expect(listed.stdout).toMatch(
      /\nretire_gone +v1 +2 +no live process +\S+Z +1 +in use; no code defines it now \(ax flow retire retire_gone once its runs are done\)\n/,
    );
    expect(listed.stdout).toMatch(/\nretire_kept +v1 +2 +1 process +never +0 +in use\n/);
    expect((await refusal(client.retireFlow("retire_gone"))).message).toMatch(/a Runtime registered it \d+ s ago/);
    await registeredLongAgo();
    expect((await refusal(client.retireFlow("retire_gone"))).message).toMatch(
      new RegExp(`1 of its runs are not finished \\(${waiting}\\)\\. Wait for them or cancel them`),
    );
    await client.cancel(waiting);

    await client.config.apply(
      [
        "tasks:",
        "  retire_gone_step: { timeout: 5s }",
        "  retire_shared: { timeout: 5s }",
        "flows:",
        "  retire_gone: { max_concurrent_runs: 2 }",
      ].join("\n"),
      "runtime.yaml",
      "test",
    );
    await registeredLongAgo();
    const refusedByCli = await runAx(["flow", "retire", "retire_gone", "--storage", env.storage, "--prefix", env.prefix]);
    expect(refusedByCli.code).toBe(1);
    expect(refusedByCli.stderr).toContain("names it at flows.retire_gone, tasks.retire_gone_step");
    const named = await refusal(client.retireFlow("retire_gone"));
    expect(named.message).toMatch(
      /config version 1 \(runtime\.yaml\) names it at flows\.retire_gone, tasks\.retire_gone_step\. Apply a version without them/,
    );
    await client.config.apply("tasks:\n  retire_shared: { timeout: 5s }\n", "runtime.yaml", "test");
    await registeredLongAgo();

    expect((await client.listSchedules()).map((s) => s.flow)).toEqual(["retire_gone"]);
    // A live process of a release before 0.21 reports no flows: it may define this one.
    await env.sql(
      "insert into processes (id, hostname, pid, roles, flows, heartbeat_at) values ('legacy-1', 'old-host', 42, '{worker}', null, now())",
    );
    expect((await client.listFlows()).map((f) => [f.name, f.definedBy])).toEqual([
      ["retire_gone", 1],
      ["retire_kept", 2],
    ]);
    expect((await refusal(client.retireFlow("retire_gone"))).message).toMatch(/release before 0\.21 .*\(old-host pid 42\)/);
    await env.sql("delete from processes where id = 'legacy-1'");
    const cli = await runAx(["flow", "retire", "retire_gone", "--storage", env.storage, "--prefix", env.prefix]);
    expect(cli.code).toBe(0);
    expect(cli.stdout).toMatch(
      /^flow retire_gone retired at \S+\n {2}its tasks no other flow runs, which runtime\.yaml may no longer name: retire_gone_step\n$/,
    );
    const again = JSON.parse(
      (await runAx(["flow", "retire", "retire_gone", "--json", "--storage", env.storage, "--prefix", env.prefix])).stdout,
    );
    expect(again).toMatchObject({ flow: "retire_gone", changed: false, tasks: ["retire_gone_step"] });

    const trigger = await refusal(client.triggerFlow("retire_gone", 3));
    expect(trigger).toBeInstanceOf(AxUnknownFlowError);
    expect(trigger.message).toMatch(/flow "retire_gone" was retired at .*Start a Runtime whose code defines it/);
    expect((await refusal(client.rerun(done.id))).message).toMatch(/was retired at/);
    expect(
      (await refusal(client.backfill("retire_gone", { from: new Date(Date.now() - 3 * 86_400_000), to: new Date() }))).message,
    ).toMatch(/was retired at/);
    const config = await refusal(client.config.apply("flows:\n  retire_gone: { max_concurrent_runs: 2 }\n", "runtime.yaml", "test"));
    expect(config).toBeInstanceOf(AxConfigError);
    expect(config.message).toMatch(
      /flows\.retire_gone: flow "retire_gone" was retired \(ax flow retire\): remove it from this file, or start a Runtime whose code defines the flow/,
    );
    const task = await refusal(client.config.apply("tasks:\n  retire_gone_step: { timeout: 5s }\n", "runtime.yaml", "test"));
    expect(task.message).toMatch(/tasks\.retire_gone_step: task "retire_gone_step" was retired with its flow/);
    expect(await client.listSchedules()).toEqual([]);

    expect((await client.listFlows()).map((f) => f.name)).toEqual(["retire_kept"]);
    const withRetired = await client.listFlows({ retired: true });
    expect(withRetired.map((f) => [f.name, f.retiredAt === null])).toEqual([
      ["retire_gone", false],
      ["retire_kept", true],
    ]);
    // Its history stays readable.
    expect((await client.getRun(done.id)).status).toBe("success");
    const audit = await client.audit({ action: "flow.retire" });
    expect(audit.map((a) => [a.target, a.detail])).toEqual([
      ["retire_gone", { changed: false }],
      ["retire_gone", { changed: true }],
    ]);
  });

  it("is answered by the API, which still shows the retired flow's graph", async () => {
    const api = await start([kept], ["api"]);
    const names = (await (await fetch(`${api.url}/api/flows`)).json()) as { flows: string[] };
    expect(names.flows).toEqual(["retire_kept"]);
    const described = (await (await fetch(`${api.url}/api/flows/retire_gone`)).json()) as {
      retiredAt: string | null;
      nodes: unknown[];
      definedBy: number;
    };
    expect(described.nodes).toHaveLength(2);
    expect(Date.parse(described.retiredAt ?? "")).toBeGreaterThan(0);
    expect(described.definedBy).toBe(0);
    const keptShown = (await (await fetch(`${api.url}/api/flows/retire_kept`)).json()) as { retiredAt: string | null; definedBy: number };
    expect([keptShown.retiredAt, keptShown.definedBy]).toEqual([null, 2]);
    const overview = (await (await fetch(`${api.url}/api/flow-overview`)).json()) as { flows: { name: string; definedBy: number }[] };
    // Two live processes define retire_kept: the one of the last test and this API process.
    expect(overview.flows.map((f) => [f.name, f.definedBy])).toEqual([["retire_kept", 2]]);
    const states = (await (await fetch(`${api.url}/api/flow-states?retired=true`)).json()) as {
      flows: { name: string; retiredAt: string | null }[];
    };
    expect(states.flows.map((f) => [f.name, f.retiredAt === null])).toEqual([
      ["retire_gone", false],
      ["retire_kept", true],
    ]);
    expect((await fetch(`${api.url}/api/flow-states?retired=maybe`)).status).toBe(400);
    const inUse = await fetch(`${api.url}/api/flows/retire_kept/retire`, { method: "POST" });
    expect(inUse.status).toBe(409);
    expect(((await inUse.json()) as { error: string }).error).toBe("AxFlowInUseError");
    const unknown = await fetch(`${api.url}/api/flows/never_was/retire`, { method: "POST" });
    expect(unknown.status).toBe(404);
    const again = await fetch(`${api.url}/api/flows/retire_gone/retire`, { method: "POST" });
    expect([again.status, ((await again.json()) as { changed: boolean }).changed]).toEqual([200, false]);
  });

  it("refuses a producer's trigger of a flow just retired, though the producer still holds the flow's version", async () => {
    const runtime = await start([kept, late]);
    const first = await client.triggerFlow("retire_late", 1, { idempotencyKey: "first" });
    expect((await client.waitForRun(first, { timeout: "20s" })).status).toBe("success");
    await runtime.stop({ timeout: "2s" });
    await registeredLongAgo();
    const producer = new Client({ storage: env.storage, redis: env.redis, prefix: env.prefix });
    try {
      // Answered by the existing run: the producer now holds the flow's version, without a new run.
      expect(await producer.triggerFlow("retire_late", 1, { idempotencyKey: "first" })).toBe(first);
      expect((await client.retireFlow("retire_late")).changed).toBe(true);

      const alone = await refusal(producer.triggerFlow("retire_late", 2));
      expect(alone).toBeInstanceOf(AxUnknownFlowError);
      expect(alone.message).toMatch(/flow "retire_late" was retired at /);
      expect((await refusal(producer.triggerFlows("retire_late", [3, 4]))).message).toMatch(/was retired at/);
      // Triggers written together: only the retired flow's is refused.
      const [keptRun, lateRun] = await Promise.allSettled([producer.triggerFlow("retire_kept", 5), producer.triggerFlow("retire_late", 6)]);
      expect(keptRun.status).toBe("fulfilled");
      expect(lateRun.status === "rejected" && lateRun.reason).toBeInstanceOf(AxUnknownFlowError);
      expect(await env.sql("select count(*)::int as n from runs where flow = 'retire_late'")).toEqual([{ n: 1 }]);
    } finally {
      await producer.close();
    }
  });

  it("comes back into use when a Runtime whose code defines it starts", async () => {
    await start([kept, gone]);
    const run = await client.waitForRun(await client.triggerFlow("retire_gone", 4), { timeout: "20s" });
    expect(run.status).toBe("success");
    expect((await client.listSchedules()).map((s) => s.flow)).toEqual(["retire_gone"]);
  });
});
