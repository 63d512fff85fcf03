import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ax,
  AxArgumentError,
  AxBackfillNotFoundError,
  AxClosedError,
  AxConfigError,
  AxRunNotFoundError,
  AxStoreError,
  AxTriggerOptionError,
  Client,
  Runtime,
} from "ax-scheduler";
import pino from "pino";
import { isolate } from "../helpers/isolated.js";

const noop = ax.task({ name: "client_args_noop" }, () => null);
const flow = ax.flow({ name: "client_args_flow" }, () => {
  noop();
});

const typed = ax.flow<{ orderId: string }>({ name: "client_args_typed", businessKey: (p) => p.orderId }, () => {
  noop();
});

async function refusal(call: () => Promise<unknown>): Promise<Error> {
  return call().then(
    () => {
      throw new Error("the call was accepted");
    },
    (error: Error) => error,
  );
}

describe("Client arguments", () => {
  const env = isolate("clientargs");
  let runtime: Runtime;
  let client: Client;

  beforeAll(async () => {
    runtime = new Runtime({
      storage: env.storage,
      redis: env.redis,
      prefix: env.prefix,
      flows: [flow, typed],
      roles: ["coordinator"],
      logLevel: "error",
    });
    await runtime.start();
    client = new Client({ storage: env.storage, redis: env.redis, prefix: env.prefix, flows: [flow] });
  });

  afterAll(async () => {
    await client?.close();
    await runtime?.stop();
    await env.cleanup();
  });

  it("answers AxRunNotFoundError for an id that is not a uuid, from every method taking a run id, without quoting SQL", async () => {
    const calls = [
      () => client.getRun("not-a-uuid"),
      () => client.waitForRun("not-a-uuid", { timeout: "1s" }),
      () => client.cancel("not-a-uuid"),
      () => client.rerun("not-a-uuid"),
      () => client.getLogs("not-a-uuid"),
    ];
    for (const call of calls) {
      const error = await refusal(call);
      expect(error).toBeInstanceOf(AxRunNotFoundError);
      expect(error.message).toBe(
        "no run with id not-a-uuid; list runs with `ax runs` or client.listRuns() (finished runs older than the retention, " +
          "90 days unless runtime.yaml sets `retention`, are pruned; `ax prune --archive` keeps them in runs_archive)",
      );
    }
    expect(await refusal(() => client.getBackfill("not-a-uuid"))).toBeInstanceOf(AxBackfillNotFoundError);
    expect(await refusal(() => client.cancelBackfill("not-a-uuid"))).toBeInstanceOf(AxBackfillNotFoundError);
  });

  it("refuses a bad listRuns filter, limit or wait timeout with AxArgumentError naming it", async () => {
    const status = await refusal(() => client.listRuns({ status: "bogus" as never }));
    expect(status).toBeInstanceOf(AxArgumentError);
    expect(status.message).toBe(
      'listRuns: status must be one of pending, running, success, failed, cancelled, or a non-empty array of them, got "bogus"',
    );
    expect(await refusal(() => client.listRuns({ status: [] }))).toBeInstanceOf(AxArgumentError);
    expect(await refusal(() => client.listRuns({ status: ["running", "bogus" as never] }))).toBeInstanceOf(AxArgumentError);
    expect((await refusal(() => client.listRuns({ limit: -1 }))).message).toBe("listRuns: limit must be a whole number at least 1, got -1");
    expect((await refusal(() => client.listRuns({ from: new Date("x") }))).message).toBe("listRuns: from is an invalid date");
    // Read in this machine's zone, text without an offset would mean another moment on another machine.
    expect((await refusal(() => client.listRuns({ from: "2026-01-01T02:00:00" }))).message).toBe(
      'listRuns: from must be a Date or an ISO 8601 date or date-time with its UTC offset, such as 2026-01-01 (midnight UTC) or 2026-01-01T02:00:00+01:00, got "2026-01-01T02:00:00"',
    );
    expect((await refusal(() => client.listRunPage({ to: "2026-02-30" }))).message).toMatch(
      /^listRunPage: to must be a Date or an ISO 8601/,
    );
    expect((await refusal(() => client.listRuns({ from: 5 as never }))).message).toBe(
      "listRuns: from must be a Date or an ISO 8601 string, got 5",
    );
    expect((await refusal(() => client.listRuns({ from: "2026-02-01", to: new Date("2026-01-01T00:00:00Z") }))).message).toBe(
      "listRuns: from is after to (2026-01-01T00:00:00.000Z): swap them",
    );
    expect((await refusal(() => client.listBackfills({ limit: 0 }))).message).toBe(
      "listBackfills: limit must be a whole number at least 1, got 0",
    );
    expect((await refusal(() => client.audit({ limit: 2.5 }))).message).toBe("audit: limit must be a whole number at least 1, got 2.5");
    expect((await refusal(() => client.getLogs("0b5c1f5e-4a43-4a52-9d1e-3d2b1a0c9f11", { attempt: 0 }))).message).toBe(
      "getLogs: attempt must be a whole number at least 1, got 0",
    );
    const timeout = await refusal(() => client.waitForRun("0b5c1f5e-4a43-4a52-9d1e-3d2b1a0c9f11", { timeout: "soon" }));
    expect(timeout).toBeInstanceOf(AxArgumentError);
    expect(timeout.message).toMatch(/^waitForRun: timeout "soon" is not a duration/);
  });

  it("refuses triggerFlows payloads that are not an array, and an invalid runAt as an invalid date", async () => {
    const payloads = await refusal(() => client.triggerFlows("client_args_flow", {} as never));
    expect(payloads).toBeInstanceOf(AxArgumentError);
    expect(payloads.message).toBe("triggerFlows(flow, payloads): must be an array of payloads (one run each), got an object");
    const runAt = await refusal(() => client.triggerFlow("client_args_flow", {}, { runAt: new Date("x") }));
    expect(runAt).toBeInstanceOf(AxTriggerOptionError);
    expect(runAt.message).toBe("trigger options: runAt: is an invalid date");
    expect(await client.listRuns({ flow: "client_args_flow" })).toEqual([]);
  });

  it("refuses a misspelt or mistyped option of any method, naming the one meant, before writing", async () => {
    const misspelt = await refusal(() => client.triggerFlow("client_args_flow", {}, { idempotency_key: "dup" } as never));
    expect(misspelt).toBeInstanceOf(AxTriggerOptionError);
    expect(misspelt.message).toBe("trigger options: idempotency_key: unknown option; did you mean idempotencyKey?");
    expect((await refusal(() => client.triggerFlow("client_args_flow", {}, { idempotencyKey: 5 } as never))).message).toBe(
      "trigger options: idempotencyKey must be a string, got 5",
    );
    expect((await refusal(() => client.triggerFlows("client_args_flow", [{}], { businessKey: "k" } as never))).message).toBe(
      'trigger options: businessKey must be a function (payload, index) => string, got "k"',
    );
    expect((await refusal(() => client.listRuns({ flw: "client_args_flow" } as never))).message).toBe(
      "listRuns: flw: unknown option; did you mean flow?",
    );
    const rerun = await refusal(() => client.rerun("0b5c1f5e-4a43-4a52-9d1e-3d2b1a0c9f11", { only: "some" as never }));
    expect(rerun).toBeInstanceOf(AxArgumentError);
    expect(rerun.message).toBe('rerun: only must be one of failed, all, got "some"');
    expect((await refusal(() => client.waitForRun("0b5c1f5e-4a43-4a52-9d1e-3d2b1a0c9f11", { timeOut: "1s" } as never))).message).toBe(
      "waitForRun: timeOut: unknown option; did you mean timeout?",
    );
    expect(await client.listRuns({ flow: "client_args_flow" })).toEqual([]);
  });

  it("refuses an idempotency or business key over 512 characters, given or computed, before writing", async () => {
    const long = "k".repeat(4000);
    const given = await refusal(() => client.triggerFlow("client_args_flow", {}, { businessKey: long }));
    expect(given).toBeInstanceOf(AxTriggerOptionError);
    expect(given.message).toBe(
      "trigger options: businessKey: 4000 characters; keys are at most 512, so derive a shorter one (a hash of the long one)",
    );
    const computed = await refusal(() =>
      client.triggerFlows("client_args_flow", [{}, {}], { idempotencyKey: (_p, i) => (i ? long : "short") }),
    );
    expect(computed).toBeInstanceOf(AxTriggerOptionError);
    expect(computed.message).toMatch(
      /^trigger options: the idempotencyKey function \(payload 1\) returned 4000 characters: keys are at most 512/,
    );
    const [id] = await client.triggerFlows("client_args_flow", [{}], { idempotencyKey: () => "k".repeat(512) });
    expect((await client.getRun(id!)).idempotencyKey).toBe("k".repeat(512));
    expect(await client.listRuns({ flow: "client_args_flow" })).toHaveLength(1);
  });

  it("refuses an empty key, given or computed, and a key function's object; takes its number as text", async () => {
    const keyed = ax.flow({ name: "client_args_flow", idempotencyKey: (p: { idem?: unknown }) => p.idem as string }, () => {
      noop();
    });
    const empty = await refusal(() => client.triggerFlow("client_args_flow", {}, { idempotencyKey: "" }));
    expect(empty).toBeInstanceOf(AxTriggerOptionError);
    expect(empty.message).toBe("trigger options: idempotencyKey is empty: give a non-empty key, or none (undefined) for no key");
    const emptyBusiness = await refusal(() =>
      client.triggerFlows("client_args_flow", [{}, {}], { businessKey: (_p, i) => (i ? "" : "b") }),
    );
    expect(emptyBusiness.message).toBe(
      "trigger options: the businessKey function (payload 1) returned an empty string: return a non-empty key, or undefined for none",
    );
    expect((await refusal(() => client.triggerFlow(keyed, { idem: "" }))).message).toContain(
      "the idempotencyKey function returned an empty string",
    );
    const object = await refusal(() => client.triggerFlow(keyed, { idem: { x: 1 } }));
    expect(object).toBeInstanceOf(AxTriggerOptionError);
    expect(object.message).toBe(
      "trigger options: the idempotencyKey function returned an object: return a string (or undefined for no key)",
    );
    const numbered = await client.triggerFlow(keyed, { idem: 42 });
    expect((await client.getRun(numbered)).idempotencyKey).toBe("42");
    expect(await client.triggerFlow(keyed, { idem: 42 })).toBe(numbered);
  });

  it("refuses a backfill bound without a UTC offset (the asking machine's zone would pick the ticks) or on a day the calendar lacks", async () => {
    const local = await refusal(() => client.backfill("client_args_flow", { from: "2026-04-01T00:00:00", to: "2026-04-01T02:00:00Z" }));
    expect(local).toBeInstanceOf(AxArgumentError);
    expect(local.message).toBe(
      'backfill: from "2026-04-01T00:00:00" has no UTC offset; write 2026-04-01T00:00:00Z for UTC or 2026-04-01T00:00:00+01:00 with the zone\'s offset (a date alone is midnight UTC)',
    );
    const spaced = await refusal(() => client.backfill("client_args_flow", { from: "2026-04-01", to: "2026-04-01 02:00" }));
    expect(spaced.message).toContain('to "2026-04-01 02:00" has no UTC offset; write 2026-04-01T02:00Z for UTC');
    // Date would roll 30 February over to 2 March and backfill days nobody asked for.
    const missingDay = await refusal(() => client.backfill("client_args_flow", { from: "2026-02-30", to: "2026-04-31T00:00:00Z" }));
    expect(missingDay).toBeInstanceOf(AxArgumentError);
    expect(missingDay.message).toBe(
      'backfill: from "2026-02-30" names a day the calendar does not have; check the month and day; to "2026-04-31T00:00:00Z" names a day the calendar does not have; check the month and day',
    );
  });

  it('refuses a rerun given only: "all" and from', async () => {
    const refused = await refusal(() => client.rerun("6d3c71f6-d6c5-45a4-8e7a-ef7b44086484", { only: "all", from: "a" }));
    expect(refused).toBeInstanceOf(AxArgumentError);
    expect(refused.message).toBe(
      'rerun: only: "all" re-executes every node, so from (a node) has nothing to choose: give one of them (from also re-executes every node that did not succeed, as only: "failed" does)',
    );
  });

  it("refuses a flow that is neither a name nor a flow, and non-text config, with AxArgumentError naming the method", async () => {
    const calls: [() => Promise<unknown>, string][] = [
      [() => client.triggerFlow(5 as never, {}), "triggerFlow: flow must be a flow's name or the flow ax.flow returned, got 5"],
      [() => client.triggerFlow(null as never, {}), "triggerFlow: flow must be a flow's name or the flow ax.flow returned, got null"],
      [
        () => client.triggerFlows(undefined as never, []),
        "triggerFlows: flow must be a flow's name or the flow ax.flow returned, got undefined",
      ],
      [() => client.pauseSchedule(5 as never), "pauseSchedule: flow must be a flow's name, got 5"],
      [() => (client.resumeSchedule as () => Promise<unknown>)(), "resumeSchedule: flow must be a flow's name, got undefined"],
      [() => client.config.apply(5 as never, "f.yaml", "me"), "config.apply(text, file, author): text must be a string, got 5"],
    ];
    for (const [call, message] of calls) {
      const refused = await refusal(call);
      expect(refused).toBeInstanceOf(AxArgumentError);
      expect(refused.message).toBe(message);
    }
  });

  it("labels runs 'manual' unless a producer says 'event'; the cluster's own labels are refused", async () => {
    expect((await client.getRun(await client.triggerFlow("client_args_flow", {}))).trigger).toBe("manual");
    const [event] = await client.triggerFlows("client_args_flow", [{}], { trigger: "event" });
    expect((await client.getRun(event!)).trigger).toBe("event");
    expect((await client.getRun(await client.triggerFlow("client_args_flow", {}, { trigger: "event" }))).trigger).toBe("event");
    const refused = await refusal(() => client.triggerFlow("client_args_flow", {}, { trigger: "schedule" as "event" }));
    expect(refused).toBeInstanceOf(AxTriggerOptionError);
    expect(refused.message).toMatch(/trigger must be one of manual, event, got "schedule"/);
  });

  it("listRunPage pages through the history with the cursor it answers", async () => {
    const ids = await client.triggerFlows("client_args_flow", [{}, {}, {}, {}, {}], { businessKey: () => "paged" });
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 3; pages++) {
      const page = await client.listRunPage({ businessKey: "paged", limit: 2, cursor });
      seen.push(...page.runs.map((r) => r.id));
      if (pages < 2) expect(page.nextCursor).toEqual(expect.any(String));
      else expect(page.nextCursor).toBeNull();
      cursor = page.nextCursor ?? undefined;
    }
    expect(seen).toHaveLength(5);
    expect(new Set(seen)).toEqual(new Set(ids));
    expect(seen).toEqual((await client.listRuns({ businessKey: "paged" })).map((r) => r.id));
  });

  it("listRuns finds the run an idempotency key made, given its flow; without the flow it is refused", async () => {
    const id = await client.triggerFlow("client_args_flow", {}, { idempotencyKey: "msg-42" });
    await client.triggerFlow("client_args_flow", {}, { idempotencyKey: "msg-43" });
    expect((await client.listRuns({ flow: "client_args_flow", idempotencyKey: "msg-42" })).map((r) => r.id)).toEqual([id]);
    expect(await client.listRuns({ flow: "client_args_flow", idempotencyKey: "msg-0" })).toEqual([]);
    const refused = await refusal(() => client.listRuns({ idempotencyKey: "msg-42" }));
    expect(refused).toBeInstanceOf(AxArgumentError);
    expect(refused.message).toBe("listRuns: idempotencyKey needs flow too: an idempotency key is unique per flow");
  });

  it("warns when an idempotency key comes back with another payload, naming the run that stands", async () => {
    const warnings: { msg: string; code: string; runId: string }[] = [];
    const logger = pino({ level: "warn" }, { write: (line: string) => void warnings.push(JSON.parse(line)) });
    const logged = new Client({ storage: env.storage, redis: env.redis, prefix: env.prefix, logger });
    try {
      const id = await logged.triggerFlow("client_args_flow", { n: 1 }, { idempotencyKey: "evt-7" });
      expect(await logged.triggerFlow("client_args_flow", { n: 1 }, { idempotencyKey: "evt-7" })).toBe(id);
      expect(warnings).toEqual([]);
      expect(await logged.triggerFlow("client_args_flow", { n: 2 }, { idempotencyKey: "evt-7" })).toBe(id);
      expect(warnings).toMatchObject([{ code: "AX_IDEMPOTENCY_KEY_REUSED", runId: id }]);
      expect(warnings[0]!.msg).toMatch(/^idempotency key "evt-7" of flow "client_args_flow" already made run .+, with another payload/);
      // A burst: one warning for the call, counting its reused keys; a repeat of the same event says nothing.
      const ids = await logged.triggerFlows("client_args_flow", [{ n: 1 }, { n: 3 }, { n: 4 }], {
        idempotencyKey: (p) => ((p as { n: number }).n === 4 ? "evt-8" : "evt-7"),
      });
      expect(ids.slice(0, 2)).toEqual([id, id]);
      expect(warnings).toHaveLength(2);
      expect(warnings[1]).toMatchObject({ code: "AX_IDEMPOTENCY_KEY_REUSED", count: 1 });
      await logged.triggerFlows("client_args_flow", [{ n: 5 }, { n: 6 }], { idempotencyKey: () => "evt-7" });
      expect(warnings[2]!.msg).toMatch(/^2 triggers' idempotency keys found runs with other payloads \(first: idempotency key "evt-7"/);
    } finally {
      await logged.close();
    }
  });

  it("takes the flow itself: its payload type is checked and its key functions apply", async () => {
    const id = await client.triggerFlow(typed, { orderId: "o-1" });
    expect((await client.getRun(id)).businessKey).toBe("o-1");
    const [many] = await client.triggerFlows(typed, [{ orderId: "o-2" }]);
    expect((await client.getRun(many!)).businessKey).toBe("o-2");
    const refused = () =>
      // @ts-expect-error the flow's payload is { orderId: string }
      client.triggerFlow(typed, { order: 1 });
    expect(refused).toBeTypeOf("function");
  });

  it("refuses an unknown flow even with no payloads, and names a key function that threw", async () => {
    const unknown = await refusal(() => client.triggerFlows("client_args_nope", []));
    expect(unknown.name).toBe("AxUnknownFlowError");
    expect(unknown.message).toContain('no flow named "client_args_nope"');
    expect(await client.triggerFlows("client_args_flow", [])).toEqual([]);
    const before = await env.sql<{ n: number }>("select count(*)::int as n from runs");
    const threw = await refusal(() => client.triggerFlow(typed, null as never));
    expect(threw).toBeInstanceOf(AxTriggerOptionError);
    expect(threw.message).toMatch(
      /^trigger options: the businessKey function threw on this payload \(.+\); make it handle such a payload, or pass businessKey in the trigger options$/,
    );
    const inBatch = await refusal(() => client.triggerFlows(typed, [{ orderId: "o-9" }, null as never]));
    expect(inBatch.message).toContain("the businessKey function (payload 1) threw on this payload");
    expect(await env.sql<{ n: number }>("select count(*)::int as n from runs")).toEqual(before);
  });

  it("refuses a second start() of a Runtime, running or stopped, and the running one goes on", async () => {
    const again = await refusal(() => runtime.start());
    expect(again).toBeInstanceOf(AxConfigError);
    expect(again.message).toBe(
      "this Runtime was already started (a Runtime starts once, and cannot start again after stop()); create a new Runtime to start again",
    );
    const id = await client.triggerFlow("client_args_flow", null);
    expect((await client.getRun(id)).status).toBe("pending");
    const once = new Runtime({
      storage: env.storage,
      redis: env.redis,
      prefix: env.prefix,
      flows: [flow],
      roles: ["coordinator"],
      logLevel: "error",
    });
    await once.start();
    await once.stop();
    expect((await refusal(() => once.start())).message).toContain("create a new Runtime to start again");
  });

  it("refuses bad constructor options with AxConfigError before connecting", () => {
    expect(() => new Client({ maxPayloadBytes: 0 })).toThrow(
      new AxConfigError("Client options: maxPayloadBytes must be a whole number at least 1, got 0"),
    );
    expect(() => new Client({ storage: "not a url", flows: "x" as never })).toThrow(
      /^Client options: storage must be a postgres:\/\/ or postgresql:\/\/ URL .*; flows must be an array of flows made by ax\.flow\(…\), got "x"$/,
    );
    expect(() => new Client({ storage: "postgres://127.0.0.1/test?schema=Bad-Name" })).toThrow(AxConfigError);
  });

  it("answers AxStoreError from every method while PostgreSQL cannot be reached, and AxClosedError once closed", async () => {
    const runId = "6d3c71f6-d6c5-45a4-8e7a-ef7b44086484";
    const unreachable = new Client({ storage: "postgres://postgres@127.0.0.1:1/test", redis: env.redis, prefix: env.prefix });
    try {
      // getRun and cancel read in a transaction, whose connection failed outside the translation.
      for (const call of [() => unreachable.getRun(runId), () => unreachable.cancel(runId), () => unreachable.listRuns({})]) {
        const error = await refusal(call);
        expect(error).toBeInstanceOf(AxStoreError);
        expect((error as AxStoreError).code).toBe("ECONNREFUSED");
      }
    } finally {
      await unreachable.close();
    }
    // The server refuses the connection itself: an unknown database.
    const [host] = env.storage.split("?");
    const noDatabase = new Client({
      storage: `${host!.replace(/\/[^/]*$/, "")}/ax_no_such_database`,
      redis: env.redis,
      prefix: env.prefix,
    });
    try {
      for (const call of [() => noDatabase.getRun(runId), () => noDatabase.cancel(runId), () => noDatabase.listRuns({})]) {
        const error = await refusal(call);
        expect(error).toBeInstanceOf(AxStoreError);
        expect((error as AxStoreError).code).toBe("3D000");
      }
    } finally {
      await noDatabase.close();
    }
    const closed = new Client({ storage: env.storage, redis: env.redis, prefix: env.prefix });
    await closed.close();
    for (const call of [() => closed.getRun(runId), () => closed.listRuns({}), () => closed.cancel(runId)]) {
      expect(await refusal(call)).toBeInstanceOf(AxClosedError);
    }
  });
});
