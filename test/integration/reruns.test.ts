import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AxNothingToRerunError,
  AxRunNotFinishedError,
  AxRunNotFoundError,
  AxTaskUnavailableError,
  AxUnknownNodeError,
  ax,
  Client,
  type RunInfo,
  type Runtime,
} from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { AX_BIN, REPO_ROOT } from "../helpers/processes.js";
import { testRuntime } from "../helpers/runtime.js";

/** Executions of each task body: the test process runs the worker, so memory is the witness. */
const executions = new Map<string, number>();
const count = (task: string) => executions.set(task, (executions.get(task) ?? 0) + 1);
let extractFails = true;

const fetchRows = ax.task({ name: "fetch_rows" }, (input: { day: string }) => {
  count("fetch_rows");
  return { day: input.day, rows: 3 };
});
const extract = ax.task({ name: "extract" }, (fetched: { day: string; rows: number }) => {
  count("extract");
  if (extractFails) throw new Error("extract: source file is truncated");
  return { ...fetched, extracted: true };
});
const load = ax.task({ name: "load" }, (extracted: { rows: number }) => {
  count("load");
  return extracted.rows;
});
const chain = ax.flow({ name: "chain" }, (input) => {
  load(extract(fetchRows(input)));
});

const keyed = ax.flow({ name: "keyed_rerun", businessKey: (input: { day: string }) => `day-${input.day}` }, (input) => {
  fetchRows(input);
});

/** Its idempotency key needs an `id` its reruns' payloads may not have: a rerun keeps its run's key. */
const twoKeys = ax.flow(
  {
    name: "two_keys_rerun",
    idempotencyKey: (input: { id: string; day: string }) => input.id.toUpperCase(),
    businessKey: (input: { id: string; day: string }) => `day-${input.day}`,
  },
  (input) => {
    fetchRows(input);
  },
);

/** Holds its run `running` until the test opens the gate. */
let openGate: () => void = () => {};
const gate = new Promise<void>((resolve) => (openGate = resolve));
const held = ax.task({ name: "held_open" }, async () => {
  await gate;
  return "done";
});
const stuck = ax.flow({ name: "stuck_rerun" }, () => {
  held();
});

const byKey = (run: RunInfo) => Object.fromEntries(run.tasks.map((t) => [t.key, t]));

describe("client.rerun(runId, options)", { timeout: 60_000 }, () => {
  const env = isolate("rerun");
  let runtime: Runtime;
  let client: Client;
  let failedRun: string;
  const runCount = async () => Number((await env.sql<{ n: number }>("select count(*)::int as n from runs"))[0]!.n);

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [chain, stuck, keyed, twoKeys], roles: ["coordinator", "worker", "api"], port: 0 });
    await runtime.start();
    client = runtime.client();
    failedRun = await client.triggerFlow("chain", { day: "2026-01-01" });
    const failed = await client.waitForRun(failedRun);
    expect(failed.status).toBe("failed");
    expect(byKey(failed).load!.status).toBe("skipped");
    extractFails = false;
  });

  afterAll(async () => {
    await client?.close();
    await runtime?.stop();
    await env.cleanup();
  });

  it("failed: the failed node and its dependants run, the upstream node is carried over and not repeated", async () => {
    const before = { ...Object.fromEntries(executions) };
    const rerunId = await client.rerun(failedRun, { only: "failed" });
    const run = await client.waitForRun(rerunId);
    expect(run.status).toBe("success");
    expect(run.trigger).toBe("rerun");
    expect(run.rerunOf).toBe(failedRun);
    const old = await client.getRun(failedRun);
    expect(run.flowVersion).toBe(old.flowVersion);
    const nodes = byKey(run);
    expect(nodes.fetch_rows).toMatchObject({
      status: "success",
      reusedFrom: failedRun,
      attempts: [],
      result: byKey(old).fetch_rows!.result,
    });
    expect(nodes.extract).toMatchObject({ status: "success", reusedFrom: null, result: { day: "2026-01-01", rows: 3, extracted: true } });
    expect(nodes.load).toMatchObject({ status: "success", reusedFrom: null, result: 3 });
    expect(executions.get("fetch_rows")).toBe(before.fetch_rows);
    expect(executions.get("extract")).toBe((before.extract ?? 0) + 1);
    expect(executions.get("load")).toBe((before.load ?? 0) + 1);
  });

  it("from: that node and its descendants run again, the rest is reused", async () => {
    const first = await client.waitForRun(await client.triggerFlow("chain", { day: "2026-01-02" }));
    const before = { ...Object.fromEntries(executions) };
    const run = await client.waitForRun(await client.rerun(first.id, { from: "extract" }));
    expect(run.status).toBe("success");
    expect(byKey(run).fetch_rows!.reusedFrom).toBe(first.id);
    expect(byKey(run).extract!.reusedFrom).toBeNull();
    expect(executions.get("fetch_rows")).toBe(before.fetch_rows);
    expect(executions.get("extract")).toBe(before.extract! + 1);
    expect(executions.get("load")).toBe(before.load! + 1);
    // only: "failed" beside from (the contract's shape) is from: it re-executes what did not succeed too.
    const both = await client.waitForRun(await client.rerun(first.id, { only: "failed", from: "load" }));
    expect(both.tasks.map((t) => [t.key, t.reusedFrom])).toEqual([
      ["fetch_rows", first.id],
      ["extract", first.id],
      ["load", null],
    ]);
  });

  it("all: every node runs again, with the original payload or the one given", async () => {
    const first = await client.waitForRun(await client.triggerFlow("chain", { day: "2026-01-03" }));
    const before = { ...Object.fromEntries(executions) };
    const same = await client.waitForRun(await client.rerun(first.id, { only: "all" }));
    expect(same.payload).toEqual({ day: "2026-01-03" });
    expect(same.tasks.every((t) => t.reusedFrom === null && t.status === "success")).toBe(true);
    const other = await client.waitForRun(await client.rerun(first.id, { only: "all", payload: { day: "2026-02-01" } }));
    expect(byKey(other).fetch_rows!.result).toEqual({ day: "2026-02-01", rows: 3 });
    for (const task of ["fetch_rows", "extract", "load"]) expect(executions.get(task)).toBe(before[task]! + 2);
  });

  it("a new payload runs again every node that takes the input, and what follows; the same payload keeps the reuse", async () => {
    const first = await client.waitForRun(await client.triggerFlow("chain", { day: "2026-01-04" }));
    const changed = await client.waitForRun(await client.rerun(first.id, { from: "load", payload: { day: "2026-03-01" } }));
    expect(changed.status).toBe("success");
    expect(byKey(changed).fetch_rows).toMatchObject({ reusedFrom: null, result: { day: "2026-03-01", rows: 3 } });
    expect(byKey(changed).extract).toMatchObject({ reusedFrom: null, result: { day: "2026-03-01", rows: 3, extracted: true } });
    // Equal as stored: an undefined field is left out, as it was from the original.
    const same = await client.waitForRun(await client.rerun(first.id, { from: "load", payload: { day: "2026-01-04", note: undefined } }));
    expect(byKey(same).fetch_rows!.reusedFrom).toBe(first.id);
    expect(byKey(same).extract!.reusedFrom).toBe(first.id);
    expect(byKey(same).load!.reusedFrom).toBeNull();
  });

  it("a rerun with a new payload computes only the business key, never the idempotency key it does not use, from the client and over HTTP", async () => {
    const first = await client.waitForRun(await client.triggerFlow(twoKeys, { id: "r1", day: "2026-06-01" }));
    expect(first).toMatchObject({ idempotencyKey: "R1", businessKey: "day-2026-06-01" });
    // No `id`: the idempotency key function would throw on this payload.
    const fromClient = await client.waitForRun(await client.rerun(first.id, { only: "all", payload: { day: "2026-06-02" } }));
    expect(fromClient.businessKey).toBe("day-2026-06-02");
    const overHttp = await fetch(`${runtime.url}/api/runs/${first.id}/rerun`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ only: "all", payload: { day: "2026-06-03" } }),
    });
    expect(overHttp.status).toBe(201);
    const { runId } = (await overHttp.json()) as { runId: string };
    expect((await client.waitForRun(runId)).businessKey).toBe("day-2026-06-03");
  });

  it("a new payload gets the business key the flow's function gives it, from the client and over HTTP; without the code the old key stays", async () => {
    const first = await client.waitForRun(await client.triggerFlow(keyed, { day: "2026-05-01" }));
    expect(first.businessKey).toBe("day-2026-05-01");
    const same = await client.waitForRun(await client.rerun(first.id, { only: "all" }));
    expect(same.businessKey).toBe("day-2026-05-01");
    const moved = await client.waitForRun(await client.rerun(first.id, { only: "all", payload: { day: "2026-05-02" } }));
    expect(moved.businessKey).toBe("day-2026-05-02");
    expect((await client.listRuns({ businessKey: "day-2026-05-02" })).map((r) => r.id)).toEqual([moved.id]);
    const overHttp = await fetch(`${runtime.url}/api/runs/${first.id}/rerun`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ only: "all", payload: { day: "2026-05-03" } }),
    });
    expect(overHttp.status).toBe(201);
    const { runId } = (await overHttp.json()) as { runId: string };
    expect((await client.waitForRun(runId)).businessKey).toBe("day-2026-05-03");
    const runs = await runCount();
    await expect(client.rerun(first.id, { only: "all", payload: null })).rejects.toThrow(
      /the businessKey function threw on this payload \(.+\); make it handle such a payload, or rerun with a payload it handles$/,
    );
    const refusedOverHttp = await fetch(`${runtime.url}/api/runs/${first.id}/rerun`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ only: "all", payload: null }),
    });
    expect(refusedOverHttp.status).toBe(400);
    expect(((await refusedOverHttp.json()) as { message: string }).message).toMatch(/; rerun with a payload it handles$/);
    expect(await runCount()).toBe(runs);
    const codeless = new Client({ storage: env.storage, redis: env.redis, prefix: env.prefix });
    try {
      const kept = await client.waitForRun(await codeless.rerun(first.id, { only: "all", payload: { day: "2026-05-04" } }));
      expect(kept.businessKey).toBe("day-2026-05-01");
    } finally {
      await codeless.close();
    }
  });

  it("bad reruns are refused with a typed error and nothing is created", async () => {
    const unfinished = await client.triggerFlow("stuck_rerun", null);
    for (let i = 0; i < 500 && (await client.getRun(unfinished)).status !== "running"; i++) await new Promise((r) => setTimeout(r, 20));
    const succeeded = (await client.listRuns({ flow: "chain", status: "success", limit: 1 }))[0]!.id;
    const runs = await runCount();
    await expect(client.rerun(randomUUID())).rejects.toBeInstanceOf(AxRunNotFoundError);
    await expect(client.rerun("not-a-run-id")).rejects.toBeInstanceOf(AxRunNotFoundError);
    await expect(client.rerun(unfinished)).rejects.toThrow(AxRunNotFinishedError);
    await expect(client.rerun(unfinished)).rejects.toThrow(/cancel it first/);
    await expect(client.rerun(failedRun, { from: "no_such_node" })).rejects.toThrow(AxUnknownNodeError);
    await expect(client.rerun(failedRun, { from: "no_such_node" })).rejects.toThrow(/fetch_rows, extract, load/);
    await expect(client.rerun(succeeded, { only: "failed" })).rejects.toBeInstanceOf(AxNothingToRerunError);
    await expect(client.rerun(succeeded, { only: "failed" })).rejects.toThrow(
      /; to run nodes again, rerun with --all or --from <node> \(ax rerun\), or only: "all" or from: "<node>" \(API, Client\)$/,
    );
    // A deployment whose flows no longer define `extract`: refused, naming the task.
    const without = ax.flow({ name: "chain_v2" }, (input) => {
      load(fetchRows(input));
    });
    const narrow = new Client({ storage: env.storage, redis: env.redis, prefix: env.prefix, flows: [without] });
    try {
      await expect(narrow.rerun(failedRun)).rejects.toThrow(AxTaskUnavailableError);
      await expect(narrow.rerun(failedRun)).rejects.toThrow(/"extract"/);
    } finally {
      await narrow.close();
    }
    expect(await runCount()).toBe(runs);
    openGate();
    await client.waitForRun(unfinished);
  });

  it("POST /api/runs/:id/rerun: 201 with the new run id; 404 unknown run, 400 bad body or unknown node, 409 nothing to rerun", async () => {
    const first = await client.waitForRun(await client.triggerFlow("chain", { day: "2026-01-04" }));
    const post = (path: string, body: unknown) =>
      fetch(`${runtime.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const created = await post(`/api/runs/${first.id}/rerun`, { from: "load" });
    expect(created.status).toBe(201);
    const { runId } = (await created.json()) as { runId: string };
    const run = await client.waitForRun(runId);
    expect(run).toMatchObject({ status: "success", trigger: "rerun", rerunOf: first.id });
    expect(byKey(run).extract!.reusedFrom).toBe(first.id);
    expect((await post(`/api/runs/${randomUUID()}/rerun`, {})).status).toBe(404);
    expect((await post(`/api/runs/${first.id}/rerun`, { only: "some" })).status).toBe(400);
    expect((await post(`/api/runs/${first.id}/rerun`, { from: "nope" })).status).toBe(400);
    const nothing = await post(`/api/runs/${first.id}/rerun`, {});
    expect(nothing.status).toBe(409);
    expect(((await nothing.json()) as { error: string }).error).toBe("AxNothingToRerunError");
    const noSchedule = await post(`/api/flows/chain/backfills`, { from: "2026-01-01T00:00:00Z", to: "2026-01-02T00:00:00Z" });
    expect(noSchedule.status).toBe(400);
  });

  it("ax rerun <id> --from <node> --wait prints the new run with its reused nodes; a bad flag mix is refused", async () => {
    const first = await client.waitForRun(await client.triggerFlow("chain", { day: "2026-01-05" }));
    const connection = ["--storage", env.storage, "--prefix", env.prefix];
    const { stdout } = await promisify(execFile)(process.execPath, [AX_BIN, "rerun", first.id, "--from", "load", "--wait", ...connection], {
      cwd: REPO_ROOT,
      env: { ...process.env, NO_COLOR: "1" },
      timeout: 90_000,
    });
    expect(stdout).toMatch(/success/);
    expect(stdout).toContain(`rerun of ${first.id}`);
    expect(stdout).toContain(`reused from run ${first.id}`);
    const refused = await promisify(execFile)(process.execPath, [AX_BIN, "rerun", first.id, "--all", "--from", "load", ...connection], {
      cwd: REPO_ROOT,
      timeout: 90_000,
    }).catch((error: { code: number; stderr: string }) => error);
    expect(refused).toMatchObject({ code: 1 });
    expect((refused as { stderr: string }).stderr).toMatch(/--all and --from together: --all re-executes every node; give it alone/);
  });
});
