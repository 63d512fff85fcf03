import pino from "pino";
import { describe, expect, it } from "vitest";
import { RepeatedErrors } from "./repeated-errors.js";

function captured(level = "warn") {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { log, lines };
}

describe("RepeatedErrors", () => {
  it("logs an outage's error once per window across queues, then again with how many it held back", () => {
    const { log, lines } = captured();
    const errors = new RepeatedErrors(log, 60_000);
    const refused = new Error("connect ECONNREFUSED 127.0.0.1:6379");
    for (let i = 0; i < 70; i++) errors.warn(refused, { queue: `default.task_${i % 7}` }, "BullMQ worker error", 1_000 + i * 100);
    errors.warn(new Error("another problem"), { queue: "default.task_0" }, "BullMQ worker error", 2_000);
    expect(lines.map((l) => [l.msg, (l.err as { message: string }).message, l.heldBack])).toEqual([
      ["BullMQ worker error", "connect ECONNREFUSED 127.0.0.1:6379", undefined],
      ["BullMQ worker error", "another problem", undefined],
    ]);
    errors.warn(refused, { queue: "default.task_3" }, "BullMQ worker error", 61_500);
    expect(lines.at(-1)).toMatchObject({ queue: "default.task_3", heldBack: 69 });
  });

  it("says once that the work goes through again, and then logs the next failure at once", () => {
    const { log, lines } = captured("info");
    const errors = new RepeatedErrors(log, 60_000);
    errors.recovered("works again");
    expect(lines).toEqual([]);
    const refused = new Error("connect ECONNREFUSED 127.0.0.1:5432");
    for (let i = 0; i < 5; i++) errors.warn(refused, {}, "could not report", 1_000 + i);
    errors.recovered("works again");
    errors.recovered("works again");
    errors.warn(refused, {}, "could not report", 2_000);
    expect(lines.map((l) => [l.level, l.msg, l.heldBack])).toEqual([
      [40, "could not report", undefined],
      [30, "works again", 4],
      [40, "could not report", undefined],
    ]);
  });
});
