import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, AxPayloadError, MAX_JSON_DEPTH, type Client, Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";

const nest = (depth: number): unknown => {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
};

const dated = ax.task({ name: "json_dated" }, (input: { at: string }) => ({ at: new Date("2026-03-08T07:00:00.000Z"), echoed: input.at }));
const datedFlow = ax.flow({ name: "json_dated_flow" }, (input) => {
  dated(input);
});
const deep = ax.task({ name: "json_deep" }, (input: { depth: number }) => nest(input.depth));
const deepFlow = ax.flow({ name: "json_deep_flow" }, (input) => {
  deep(input);
});

describe("JSON values between tasks", () => {
  const env = isolate("jsonvalues");
  let runtime: Runtime;
  let client: Client;

  beforeAll(async () => {
    runtime = new Runtime({
      storage: env.storage,
      redis: env.redis,
      prefix: env.prefix,
      flows: [datedFlow, deepFlow],
      roles: ["coordinator", "worker"],
      logLevel: "error",
    });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
    await runtime?.stop();
    await env.cleanup();
  });

  it("stores a Date in a payload or a result as its ISO string, as JSON.stringify writes it", async () => {
    const runId = await client.triggerFlow("json_dated_flow", { at: new Date("2026-01-02T03:04:05.678Z") });
    const run = await client.waitForRun(runId, { timeout: "20s" });
    expect(run.status).toBe("success");
    expect(run.payload).toEqual({ at: "2026-01-02T03:04:05.678Z" });
    expect(run.tasks[0]!.result).toEqual({ at: "2026-03-08T07:00:00.000Z", echoed: "2026-01-02T03:04:05.678Z" });
  });

  it("refuses a payload nested deeper than the limit, naming depth and limit, and writes nothing", async () => {
    const error = await client.triggerFlow("json_deep_flow", { x: nest(2000) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AxPayloadError);
    expect((error as Error).message).toMatch(
      new RegExp(
        `^payload is nested deeper than the limit of ${MAX_JSON_DEPTH} levels: \\$\\.x(\\[0\\])+ is nested ${MAX_JSON_DEPTH + 1} levels deep\\.`,
      ),
    );
    expect(await client.listRuns({ flow: "json_deep_flow" })).toEqual([]);
  });

  it("fails a task whose result is nested deeper than the limit with AxNotJsonError, not a RangeError", async () => {
    const run = await client.waitForRun(await client.triggerFlow("json_deep_flow", { depth: 2000 }), { timeout: "20s" });
    expect(run.status).toBe("failed");
    expect(run.tasks[0]!.error).toMatchObject({ name: "AxNotJsonError" });
    expect(run.tasks[0]!.error!.message).toMatch(
      new RegExp(
        `^result of task "json_deep" is nested deeper than the limit of ${MAX_JSON_DEPTH} levels: \\$(\\[0\\])+ is nested ${MAX_JSON_DEPTH + 1} levels deep\\.`,
      ),
    );
    const fine = await client.waitForRun(await client.triggerFlow("json_deep_flow", { depth: MAX_JSON_DEPTH }), { timeout: "20s" });
    expect(fine.status).toBe("success");
  });
});
