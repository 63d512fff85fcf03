import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import {
  ax,
  AxDefinitionError,
  AxNotJsonError,
  AxPayloadError,
  AxPayloadTooLargeError,
  AxResultTooLargeError,
  AxTriggerOptionError,
  AxUnknownFlowError,
  Client,
  Runtime,
} from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

const echo = ax.task({ name: "echo" }, (value: unknown) => value);
const huge = ax.task({ name: "huge", maxResultBytes: 1024 }, () => ({ blob: "x".repeat(4096) }));
const after = ax.task({ name: "after_huge" }, (value: unknown) => value);

const echoFlow = ax.flow({ name: "echo_flow", idempotencyKey: (input: { id?: string }) => input?.id ?? "none" }, (input) => {
  echo(input);
});
const hugeFlow = ax.flow({ name: "huge_result" }, () => {
  after(huge());
});

const MiB = 1024 * 1024;

describe("bad input is refused with a clear error and writes nothing", () => {
  const env = isolate("badinput");
  let runtime: Runtime;
  let api: Runtime;
  let client: Client;
  let smallClient: Client;
  let redis: Redis;

  /** Rows in every table a trigger writes, plus Redis keys of jobs (job ids embed the run's uuid). */
  async function written(): Promise<Record<string, number>> {
    const counts: Record<string, number> = {};
    for (const table of ["runs", "node_runs", "idempotency_keys", "attempts"]) {
      const [row] = await env.sql<{ n: number }>(`select count(*)::int as n from ${table}`);
      counts[table] = row!.n;
    }
    const keys: string[] = [];
    let cursor = "0";
    do {
      const [next, batch] = await redis.scan(cursor, "MATCH", `${env.prefix}:*`, "COUNT", 1000);
      cursor = next;
      keys.push(...batch);
    } while (cursor !== "0");
    counts.jobKeys = keys.filter((k) => /[0-9a-f]{8}-[0-9a-f]{4}-/.test(k)).length;
    for (const list of ["wait", "delayed", "prioritized", "active"]) {
      const key = `${env.prefix}:default:${list}`;
      const type = await redis.type(key);
      counts[list] = type === "list" ? await redis.llen(key) : type === "zset" ? await redis.zcard(key) : 0;
    }
    return counts;
  }

  /** Runs `attempt`, expects it to reject with `type` whose message matches `message`, and that nothing was written. */
  async function refused(attempt: () => Promise<unknown>, type: new (...args: never[]) => Error, message: RegExp): Promise<void> {
    const before = await written();
    const error = await attempt().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(type);
    expect((error as Error).name).toBe(type.name);
    expect((error as Error).message).toMatch(message);
    expect(await written()).toEqual(before);
  }

  beforeAll(async () => {
    redis = new Redis(env.redis);
    runtime = testRuntime(env, { flows: [echoFlow, hugeFlow] });
    await runtime.start();
    api = new Runtime({
      storage: env.storage,
      redis: env.redis,
      prefix: env.prefix,
      flows: [echoFlow, hugeFlow],
      roles: ["api"],
      port: 0,
      insecureNoAuth: true,
      logLevel: "warn",
    });
    await api.start();
    client = new Client({ storage: env.storage, redis: env.redis, prefix: env.prefix, flows: [echoFlow] });
    smallClient = new Client({ storage: env.storage, redis: env.redis, prefix: env.prefix, maxPayloadBytes: 100 });
    // One good run first, so "nothing written" is checked against a schema that has rows.
    const ok = await client.waitForRun(await client.triggerFlow("echo_flow", { id: "good" }), { timeout: "20s" });
    expect(ok.status).toBe("success");
  });

  afterAll(async () => {
    await client?.close();
    await smallClient?.close();
    await api?.stop();
    await runtime?.stop();
    redis?.disconnect();
    await env.cleanup();
  });

  describe("triggers", () => {
    it("refuses an unknown flow, naming it and the known ones", async () => {
      await refused(
        () => client.triggerFlow("no_such_flow", { id: "x" }),
        AxUnknownFlowError,
        /no flow named "no_such_flow".*known: .*echo_flow/,
      );
    });

    it("refuses a payload holding a function", async () => {
      await refused(
        () => client.triggerFlow("echo_flow", { id: "f", callback: () => 1 }),
        AxPayloadError,
        /payload is not plain JSON: \$\.callback is a function/,
      );
    });

    it("refuses a payload holding a BigInt", async () => {
      await refused(() => client.triggerFlow("echo_flow", { id: "b", amount: 10n }), AxPayloadError, /\$\.amount is a BigInt/);
    });

    it("refuses a batch with one bad payload, naming which, and writes none of it", async () => {
      await refused(
        () => client.triggerFlows("echo_flow", [{ id: "ok" }, { id: "b", amount: 10n }]),
        AxPayloadError,
        /^payload 1 is not plain JSON: \$\.amount is a BigInt/,
      );
    });

    it("refuses a circular payload", async () => {
      const payload: Record<string, unknown> = { id: "c" };
      payload.self = payload;
      await refused(() => client.triggerFlow("echo_flow", payload), AxPayloadError, /\$\.self refers back to itself \(circular\)/);
    });

    it("refuses a string PostgreSQL cannot store (NUL, lone surrogate), naming its JSON path", async () => {
      await refused(
        () => client.triggerFlow("echo_flow", { id: "n", lines: [{ note: "ok" }, { note: "a\u0000b" }] }),
        AxPayloadError,
        /payload cannot be stored in PostgreSQL: \$\.lines\[1\]\.note contains a NUL character .*Remove the character/,
      );
      await refused(
        () => client.triggerFlow("echo_flow", { id: "s", text: "😀".slice(0, 1) }),
        AxPayloadError,
        /\$\.text contains a lone UTF-16 surrogate/,
      );
      await refused(
        () => client.triggerFlow("echo_flow", { id: "k", "key\u0000": 1 }),
        AxPayloadError,
        /\$\["key\\u0000"\] is a key that contains a NUL/,
      );
      // A key is an option, not the payload: refused as the other bad keys are.
      await refused(
        () => client.triggerFlow("echo_flow", { id: "b" }, { businessKey: "order\u0000" }),
        AxTriggerOptionError,
        /^trigger options: businessKey cannot be stored in PostgreSQL: \$ contains a NUL character/,
      );
      await refused(
        () => client.triggerFlow("echo_flow", { id: "i" }, { idempotencyKey: "😀".slice(0, 1) }),
        AxTriggerOptionError,
        /^trigger options: idempotencyKey cannot be stored in PostgreSQL: \$ contains a lone UTF-16 surrogate/,
      );
      // Callers that catch the older, broader class still see it.
      await expect(client.triggerFlow("echo_flow", { id: "o", text: "\u0000" })).rejects.toBeInstanceOf(AxNotJsonError);
    });

    it("refuses a payload over the client's maxPayloadBytes", async () => {
      await refused(
        () => smallClient.triggerFlow("echo_flow", { id: "s", text: "y".repeat(200) }),
        AxPayloadTooLargeError,
        /over the 100-byte limit.*Store the data elsewhere/,
      );
    });

    it("refuses a payload over the default 1 MiB cap", async () => {
      await refused(
        () => client.triggerFlow("echo_flow", { id: "l", text: "z".repeat(MiB) }),
        AxPayloadTooLargeError,
        /over the 1048576-byte limit/,
      );
    });
  });

  describe("definitions", () => {
    it("refuses a task called outside a flow body", async () => {
      await refused(async () => echo(1), AxDefinitionError, /task "echo" was called outside a flow body.*echo\.run/);
    });

    it("refuses two different tasks with one name in one flow", async () => {
      const twin = ax.task({ name: "echo" }, (value: unknown) => value);
      await refused(
        async () =>
          ax.flow({ name: "twins" }, (input) => {
            twin(echo(input));
          }),
        AxDefinitionError,
        /flow "twins" uses two different tasks named "echo"/,
      );
    });

    it("refuses a flow argument that is a function", async () => {
      await refused(
        async () => ax.flow({ name: "fn_arg" }, () => void echo(() => 1)),
        AxDefinitionError,
        /flow "fn_arg": argument 1 of "echo" is not plain JSON: \$ is a function.*or a Ref/,
      );
    });

    it("refuses a flow argument that is a Date", async () => {
      await refused(
        async () => ax.flow({ name: "date_arg" }, () => void echo(new Date())),
        AxDefinitionError,
        /flow "date_arg": argument 1 of "echo" is not plain JSON: \$ is a Date/,
      );
    });

    it("refuses a spread Ref, its keys, and a field read off one, saying to read it inside a task", async () => {
      await refused(
        async () => ax.flow({ name: "spread_ref" }, (input) => void echo({ ...echo(input) })),
        AxDefinitionError,
        /the result of node "echo" \(a Ref\) has no fields while flow "spread_ref" is traced: spreading it/,
      );
      await refused(
        async () => ax.flow({ name: "keys_ref" }, (input) => void echo(Object.keys(echo(input)))),
        AxDefinitionError,
        /has no fields while flow "keys_ref" is traced/,
      );
      await refused(
        async () => ax.flow({ name: "nested_ref" }, (input) => void echo({ order: input, lines: [1, echo(input)] } as never)),
        AxDefinitionError,
        /flow "nested_ref": argument 1 of "echo" holds a Ref at \$\.order\. A Ref has no value until the run, so it must be an argument of its own/,
      );
      await refused(
        async () => ax.flow({ name: "iterated_ref" }, (input) => void echo([...(echo(input) as unknown as unknown[])])),
        AxDefinitionError,
        /the result of node "echo" \(a Ref\) cannot be spread or iterated while flow "iterated_ref" is traced/,
      );
      await refused(
        async () => ax.flow({ name: "field_ref" }, (input) => void echo((input as unknown as { amount: unknown }).amount)),
        AxDefinitionError,
        /flow "field_ref": argument 1 of "echo" is undefined\. If it reads a field of a Ref .* read the field inside the task/,
      );
    });

    it("refuses retryOn: [] and an error in both retryOn and noRetryOn, and names what a retryOn item must be", async () => {
      await refused(
        async () => ax.task({ name: "empty_retry_on", retries: 2, retryOn: [] }, () => 1),
        AxDefinitionError,
        /retryOn: is empty, so no error would be retried: leave retryOn out to retry every error, or set retries: 0/,
      );
      await refused(
        async () => ax.task({ name: "both_retry_on", retryOn: [RangeError], noRetryOn: ["RangeError"] }, () => 1),
        AxDefinitionError,
        /task "both_retry_on" has RangeError in both retryOn and noRetryOn/,
      );
      await refused(
        async () => ax.task({ name: "bad_retry_on", retryOn: [42 as never] }, () => 1),
        AxDefinitionError,
        /retryOn\.0: must be an error class \(RangeError, a class of your own\) or the name of one as a string/,
      );
      // A predicate was accepted, and the retry check then threw on every failure: the attempt's
      // outcome was never recorded and the node stayed running.
      const predicate =
        /: must be an error class \(extending Error\) or the name of one as a string \("TimeoutError"\), not a function that tests the error/;
      for (const [name, matcher] of [
        ["arrow_retry_on", (e: { code?: string }) => e.code === "ECONNRESET"],
        [
          "function_retry_on",
          function isReset(e: { code?: string }) {
            return e.code === "ECONNRESET";
          },
        ],
        ["class_retry_on", class NotAnError {}],
      ] as const) {
        await refused(async () => ax.task({ name, retries: 1, retryOn: [matcher as never] }, () => 1), AxDefinitionError, predicate);
        await refused(async () => ax.task({ name: `${name}_no`, noRetryOn: [matcher as never] }, () => 1), AxDefinitionError, predicate);
      }
      class InvoiceApiError extends Error {}
      expect(ax.task({ name: "class_matchers", retryOn: [InvoiceApiError, Error, "TimeoutError"] }, () => 1).taskName).toBe(
        "class_matchers",
      );
    });

    it("refuses an async flow body", async () => {
      await refused(
        async () =>
          ax.flow({ name: "async_body" }, async (input) => {
            echo(input);
          }),
        AxDefinitionError,
        /the body of flow "async_body" is async; it must be synchronous/,
      );
    });

    it("refuses an async flow body that calls tasks after an await, without an unhandled rejection", async () => {
      await refused(
        async () =>
          ax.flow({ name: "async_late" }, async (input) => {
            await Promise.resolve();
            echo(input);
          }),
        AxDefinitionError,
        /the body of flow "async_late" is async/,
      );
    });

    it("refuses bad task options", async () => {
      await refused(
        async () => ax.task({ name: "neg", retries: -1 }, () => 1),
        AxDefinitionError,
        /task "neg" has invalid options: .*retries/,
      );
      await refused(
        async () => ax.task({ name: "bad", timeout: "soon" }, () => 1),
        AxDefinitionError,
        /task "bad" has invalid options: .*timeout/,
      );
      await refused(async () => ax.task({ name: "has space" }, () => 1), AxDefinitionError, /task "has space" has invalid options/);
      // The spellings of a YAML file, or of another language, name the option meant.
      await refused(
        async () => ax.task({ name: "snake", retry_backoff: 10 } as never, () => 1),
        AxDefinitionError,
        /task "snake" has invalid options: retry_backoff: unknown option; did you mean retryBackoff\?/,
      );
      await refused(
        async () => ax.flow({ name: "snake_flow", max_concurrent_runs: 2 } as never, () => {}),
        AxDefinitionError,
        /flow "snake_flow" has invalid options: max_concurrent_runs: unknown option; did you mean maxConcurrentRuns\?/,
      );
      // Inside a nested option too, named by its whole path; the key it misspells is reported missing after it, not as badly typed.
      await refused(
        async () => ax.task({ name: "typo_pool", pool: { name: "db", slot: 2 } } as never, () => 1),
        AxDefinitionError,
        /^task "typo_pool" has invalid options: pool\.slot: unknown option; did you mean slots\?; pool\.slots: missing \(a whole number of at least 1\)$/,
      );
      await refused(
        async () => ax.task({ name: "typo_rate", rateLimit: { max: 2, per: "1s", kye: "user_id" } } as never, () => 1),
        AxDefinitionError,
        /^task "typo_rate" has invalid options: rateLimit\.kye: unknown option; did you mean key\?$/,
      );
    });
  });

  describe("the HTTP API", () => {
    const post = (flow: string, body: string) =>
      fetch(`${api.url}/api/flows/${flow}/runs`, { method: "POST", headers: { "content-type": "application/json" }, body });

    async function refusedOverHttp(flow: string, body: string, status: number, error: string | RegExp, message: RegExp): Promise<void> {
      const before = await written();
      const response = await post(flow, body);
      expect(response.status).toBe(status);
      expect(response.headers.get("content-type")).toMatch(/application\/json/);
      const json = (await response.json()) as { error: string; message: string };
      expect(json.error).toMatch(error);
      expect(json.message).toMatch(message);
      expect(await written()).toEqual(before);
    }

    it("answers 404 for an unknown flow", async () => {
      await refusedOverHttp(
        "no_such_flow",
        JSON.stringify({ payload: { id: "h" } }),
        404,
        /^AxUnknownFlowError$/,
        /no flow named "no_such_flow"/,
      );
    });

    it("answers 400 for a body that is not JSON", async () => {
      await refusedOverHttp("echo_flow", "{payload: nope", 400, /\w+/, /not valid JSON/);
    });

    it("answers 400 for unknown fields in the body", async () => {
      await refusedOverHttp("echo_flow", JSON.stringify({ payload: 1, idempotency_key: "k" }), 400, /^BadRequest$/, /idempotency_key/);
    });

    it("answers 400 AxTriggerOptionError for a key PostgreSQL cannot store", async () => {
      await refusedOverHttp(
        "echo_flow",
        JSON.stringify({ payload: { id: "h" }, businessKey: "b\u0000" }),
        400,
        /^AxTriggerOptionError$/,
        /^trigger options: businessKey cannot be stored in PostgreSQL: \$ contains a NUL character/,
      );
    });

    it("answers 400 for a payload PostgreSQL cannot store, naming its JSON path", async () => {
      await refusedOverHttp(
        "echo_flow",
        JSON.stringify({ payload: { id: "h", text: "x\u0000" } }),
        400,
        /^AxPayloadError$/,
        /\$\.text contains a NUL character/,
      );
      await refusedOverHttp(
        "echo_flow",
        '{"payload":{"id":"h","text":"\\ud83d"}}',
        400,
        /^AxPayloadError$/,
        /\$\.text contains a lone UTF-16 surrogate/,
      );
    });

    it("answers 413 for a payload over the 1 MiB cap, saying what to do", async () => {
      const body = JSON.stringify({ payload: { text: "z".repeat(MiB + 10) } });
      await refusedOverHttp("echo_flow", body, 413, /^AxPayloadTooLargeError$/, /over the 1048576-byte limit.*Store the data elsewhere/);
    });

    it("still accepts a good trigger", async () => {
      const response = await post("echo_flow", JSON.stringify({ payload: { id: "http" } }));
      expect(response.status).toBe(201);
      const { runId } = (await response.json()) as { runId: string };
      expect((await client.waitForRun(runId, { timeout: "20s" })).status).toBe("success");
    });
  });

  it("fails a node whose result is over maxResultBytes, telling the author to store it elsewhere", async () => {
    const run = await client.waitForRun(await client.triggerFlow("huge_result", null), { timeout: "20s" });
    expect(run.status).toBe("failed");
    const node = run.tasks.find((t) => t.key === "huge")!;
    expect(node.status).toBe("failed");
    expect(node.result).toBeNull();
    expect(node.error).toMatchObject({ name: AxResultTooLargeError.name });
    expect(node.error!.message).toMatch(/task "huge" returned \d+ bytes, over maxResultBytes \(1024\)\. Store the data elsewhere/);
    expect(node.attempts).toHaveLength(1);
    expect(node.attempts[0]!.outcome).toBe("failed");
    expect(run.tasks.find((t) => t.key === "after_huge")!.status).toBe("skipped");
  });
});
