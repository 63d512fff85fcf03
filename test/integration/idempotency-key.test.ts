import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, type Client, type RunInfo, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

type Mode = "always" | "once" | "never";

/** Every attempt's `ax.context().idempotencyKey`, as `runId/nodeKey/attempt`: the test process runs the worker. */
const keys = new Map<string, string>();
const note = () => {
  const { runId, nodeKey, attempt, idempotencyKey } = ax.context();
  keys.set(`${runId}/${nodeKey}/${attempt}`, idempotencyKey);
};

const first = ax.task({ name: "idem_first" }, () => {
  note();
  return "first";
});
// Fails its first attempt ("once") or every one ("always"): one retry shows the key across retries.
const second = ax.task({ name: "idem_second", retries: 1, retryBackoff: "10ms" }, (_first: string, { fail }: { fail: Mode }) => {
  note();
  if (fail === "always" || (fail === "once" && ax.context().attempt === 1)) throw new Error(`failing (${fail})`);
  return "ok";
});
const keyed = ax.flow({ name: "idem_keyed" }, (input) => {
  second(first(), input);
});

/** The keys the attempts of `run` saw, as `nodeKey/attempt -> key`. */
const keysOf = (run: RunInfo) =>
  Object.fromEntries([...keys].filter(([at]) => at.startsWith(`${run.id}/`)).map(([at, key]) => [at.slice(run.id.length + 1), key]));

describe("ax.context().idempotencyKey", () => {
  const env = isolate("idemkey");
  let runtime: Runtime;
  let client: Client;

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [keyed] });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
    await runtime?.stop();
    await env.cleanup();
  });

  const finished = async (runId: Promise<string>) => client.waitForRun(await runId, { timeout: "30s" });

  it("is runId:nodeKey, the same for every attempt, and names the original run in every rerun of it", async () => {
    const original = await finished(client.triggerFlow("idem_keyed", { fail: "always" }));
    expect(original.status).toBe("failed");
    expect(keysOf(original)).toEqual({
      "idem_first/1": `${original.id}:idem_first`,
      "idem_second/1": `${original.id}:idem_second`,
      "idem_second/2": `${original.id}:idem_second`,
    });

    // Failed only: the second node alone runs (started by its fence), first failing once then retried.
    const failedOnly = await finished(client.rerun(original.id, { payload: { fail: "once" } }));
    expect(failedOnly.status).toBe("success");
    expect(keysOf(failedOnly)).toEqual({ "idem_second/1": `${original.id}:idem_second`, "idem_second/2": `${original.id}:idem_second` });

    // A rerun of a rerun, every node: the second node starts with the first's completion (local continuation).
    const all = await finished(client.rerun(failedOnly.id, { only: "all", payload: { fail: "never" } }));
    expect(all.status).toBe("success");
    expect(keysOf(all)).toEqual({ "idem_first/1": `${original.id}:idem_first`, "idem_second/1": `${original.id}:idem_second` });

    const from = await finished(client.rerun(all.id, { from: "idem_second" }));
    expect(from.status).toBe("success");
    expect(keysOf(from)).toEqual({ "idem_second/1": `${original.id}:idem_second` });

    const other = await finished(client.triggerFlow("idem_keyed", { fail: "never" }));
    expect(keysOf(other)).toEqual({ "idem_first/1": `${other.id}:idem_first`, "idem_second/1": `${other.id}:idem_second` });
  });

  it("keeps naming the original run once retention deleted it", async () => {
    const original = await finished(client.triggerFlow("idem_keyed", { fail: "always" }));
    const rerun = await finished(client.rerun(original.id, { payload: { fail: "never" } }));
    await env.sql("delete from runs where id = $1", [original.id]);
    const again = await finished(client.rerun(rerun.id, { from: "idem_second" }));
    expect(keysOf(again)).toEqual({ "idem_second/1": `${original.id}:idem_second` });
  });

  it("keeps naming the original run once retention deleted it and reruns in the middle of the chain", async () => {
    const original = await finished(client.triggerFlow("idem_keyed", { fail: "always" }));
    const middle = await finished(client.rerun(original.id, { only: "all" }));
    const newest = await finished(client.rerun(middle.id, { payload: { fail: "never" } }));
    await env.sql("delete from runs where id = any($1::uuid[])", [[original.id, middle.id]]);
    const again = await finished(client.rerun(newest.id, { from: "idem_second" }));
    expect(keysOf(again)).toEqual({ "idem_second/1": `${original.id}:idem_second` });
  });
});
