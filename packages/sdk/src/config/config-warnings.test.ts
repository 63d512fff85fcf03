import { describe, expect, it } from "vitest";
import { codeRetryPolicy, retryListWarnings, unservedQueueWarnings } from "./config-warnings.js";
import { parseRuntimeConfig, type KnownNames } from "./runtime-config.js";

const known: KnownNames = {
  tasks: ["charge", "notify"],
  flows: [],
  taskRetries: {
    charge: { retries: 3, retryOn: ["CardDeclined", "GatewayTimeout"], noRetryOn: ["FraudSuspected"] },
    notify: { retries: 2, retryOn: ["SmtpBusy"] },
  },
};

const parse = (...lines: string[]) => parseRuntimeConfig(lines.join("\n"), "config/runtime.yaml", known);

describe("retryListWarnings", () => {
  it("warns when no_retry_on stops an error the code's retryOn retries, and says how to mean it", () => {
    expect(retryListWarnings(parse("tasks:", "  charge: { no_retry_on: [CardDeclined] }"), known)).toEqual([
      "tasks.charge.no_retry_on: CardDeclined is also in the task's retryOn in code; no_retry_on wins, so CardDeclined will not be retried. If that is meant, write retry_on here without CardDeclined (retry_on: [GatewayTimeout]); otherwise remove CardDeclined from no_retry_on",
    ]);
    expect(retryListWarnings(parse("tasks:", "  notify: { no_retry_on: [SmtpBusy] }"), known)).toEqual([
      "tasks.notify.no_retry_on: SmtpBusy is also in the task's retryOn in code; no_retry_on wins, so SmtpBusy will not be retried. If that is meant, set retries: 0 here (the code's retryOn lists no other error); otherwise remove SmtpBusy from no_retry_on",
    ]);
  });

  it("warns when retry_on names an error the code's noRetryOn keeps from being retried", () => {
    expect(retryListWarnings(parse("tasks:", "  charge: { retry_on: [FraudSuspected, CardDeclined] }"), known)).toEqual([
      "tasks.charge.retry_on: FraudSuspected is also in the task's noRetryOn in code, which wins, so FraudSuspected will still not be retried. To retry FraudSuspected, write no_retry_on here without FraudSuspected (no_retry_on: []); otherwise remove FraudSuspected from retry_on",
    ]);
  });

  it("says nothing once the file writes what the warning asks for, or when lists do not meet", () => {
    const quiet = [
      parse("tasks:", "  charge: { no_retry_on: [CardDeclined], retry_on: [GatewayTimeout] }"),
      parse("tasks:", "  charge: { retry_on: [FraudSuspected], no_retry_on: [] }"),
      parse("tasks:", "  notify: { no_retry_on: [SmtpBusy], retries: 0 }"),
      parse("tasks:", "  charge: { no_retry_on: [Unrelated] }", "  notify: { retry_on: [SmtpBusy, Other] }"),
      // retry_on: null lifts the code's list, so no_retry_on contradicts nothing.
      parse("tasks:", "  notify: { no_retry_on: [SmtpBusy], retry_on: null }"),
    ];
    for (const config of quiet) expect(retryListWarnings(config, known)).toEqual([]);
    // Retries left at their default of 0 (written nowhere): the lists decide nothing either.
    const defaultRetries: KnownNames = { tasks: ["notify"], flows: [], taskRetries: { notify: { retryOn: ["SmtpBusy"] } } };
    expect(retryListWarnings(parse("tasks:", "  notify: { no_retry_on: [SmtpBusy] }"), defaultRetries)).toEqual([]);
    // No code options stored (a Runtime older than them, or none started yet): nothing to contradict.
    expect(retryListWarnings(parse("tasks:", "  charge: { no_retry_on: [CardDeclined] }"), { tasks: ["charge"], flows: [] })).toEqual([]);
  });
});

describe("unservedQueueWarnings", () => {
  const moved = parse("tasks:", "  notify: { queue: mail }", "  charge: { queue: default }");

  it("warns for a task moved to a queue no live worker runs it in, naming where they do", () => {
    expect(unservedQueueWarnings(moved, ["default.charge", "default.notify", "heavy.x.y"])).toEqual([
      'tasks.notify.queue: no live worker runs task "notify" in queue "mail" (live workers run it in default), so its jobs will wait; start a worker with --queues mail (one started before this version keeps the queues its tasks were in then: restart it), or fix the queue name',
    ]);
    expect(unservedQueueWarnings(moved, ["default.charge", "heavy.x.y"])).toEqual([
      'tasks.notify.queue: no live worker runs task "notify" in queue "mail" (live workers serve default, heavy, and none runs this task), so its jobs will wait; start a worker with --queues mail whose flows define the task, or fix the queue name',
    ]);
  });

  it("says nothing when the queue is served, or when no worker is live (a version applied before the deploy)", () => {
    expect(unservedQueueWarnings(moved, ["default.charge", "mail.notify"])).toEqual([]);
    expect(unservedQueueWarnings(moved, [])).toEqual([]);
  });
});

describe("codeRetryPolicy", () => {
  it("reads the retry options of stored code options, and nothing from options it cannot read", () => {
    expect(codeRetryPolicy({ retries: 3, retryOn: ["GatewayTimeout"], pool: "core_db" })).toEqual({
      retries: 3,
      retryOn: ["GatewayTimeout"],
    });
    expect(codeRetryPolicy({ noRetryOn: [{ class: "FraudSuspected" }] })).toBeUndefined();
  });
});
