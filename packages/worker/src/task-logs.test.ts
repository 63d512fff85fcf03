import { randomBytes, randomUUID } from "node:crypto";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate, openStore, type Store } from "@ax/store";
import type { CapturedLine } from "./log-capture.js";
import { TaskLogWriter } from "./task-logs.js";

const PG_URL = process.env.AX_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

const line = (msg: string, fields: CapturedLine["fields"] = null): CapturedLine => ({
  at: Date.now(),
  level: "info",
  msg,
  fields,
  bytes: 0,
});

/** One batch shared by several runs' attempts, on a real PostgreSQL. */
describe("task log batches", () => {
  const schema = `ax_task_logs_${randomBytes(4).toString("hex")}`;
  let store: Store;
  const warnings: Record<string, unknown>[] = [];
  const log = pino(
    { level: "warn" },
    {
      write(text: string) {
        warnings.push(JSON.parse(text) as Record<string, unknown>);
      },
    },
  );

  beforeAll(async () => {
    store = openStore({ url: `${PG_URL}?schema=${schema}`, poolSize: 4 });
    await migrate(store);
  });

  afterAll(async () => {
    await store?.db.execute(`drop schema if exists "${schema}" cascade`);
    await store?.close();
  });

  const stored = async (runIds: string[]) =>
    (
      (await store.db.execute(
        `select run_id, msg, fields from attempt_logs where run_id in (${runIds.map((id) => `'${id}'`).join(",")}) order by run_id, seq`,
      )) as unknown as { rows: { run_id: string; msg: string; fields: unknown }[] }
    ).rows;

  it("stores a line with a NUL or a lone surrogate, made storable, and every other run's lines of the batch", async () => {
    const writer = new TaskLogWriter(store.db, log);
    const good: string[] = [randomUUID(), randomUUID(), randomUUID()];
    const [nul, surrogate] = [randomUUID(), randomUUID()];
    const attempt = (runId: string) => writer.attempt({ runId, nodeKey: "logs", attempt: 1 });
    const nulLog = attempt(nul);
    nulLog.add(line("bad\u0000line", { f: "x\u0000y", nested: [{ "k\u0000": 1 }] }));
    const surrogateLog = attempt(surrogate);
    surrogateLog.add(line("half \ud83d emoji, whole \ud83d\ude00", { "k\ud800": "\udc00" }));
    const goodLogs = good.map((runId) => {
      const attemptLog = attempt(runId);
      attemptLog.add(line("fine line", { a: 1 }));
      return attemptLog;
    });
    for (const attemptLog of [nulLog, surrogateLog, ...goodLogs]) attemptLog.close();
    await writer.close();

    const rows = await stored([...good, nul, surrogate]);
    expect(rows.filter((r) => good.includes(r.run_id))).toEqual(
      good.map(() => expect.objectContaining({ msg: "fine line", fields: { a: 1 } })),
    );
    expect(rows.find((r) => r.run_id === nul)).toMatchObject({
      msg: "bad\uFFFDline",
      fields: { f: "x\uFFFDy", nested: [{ "k\uFFFD": 1 }] },
    });
    expect(rows.find((r) => r.run_id === surrogate)).toMatchObject({
      msg: "half \uFFFD emoji, whole \ud83d\ude00",
      fields: { "k\uFFFD": "\uFFFD" },
    });
  });

  it("splits a batch PostgreSQL refuses, so only the refused lines are dropped, with a warning counting them", async () => {
    const writer = new TaskLogWriter(store.db, log);
    const runs: string[] = Array.from({ length: 9 }, () => randomUUID());
    const guilty = runs[4]!;
    warnings.length = 0;
    // Past the sanitising of AttemptLog: what PostgreSQL would refuse whatever the line holds.
    runs.forEach((runId, i) => {
      writer.push({
        runId,
        node: "logs",
        attempt: 1,
        seq: 1,
        at: new Date(),
        level: "info",
        msg: runId === guilty ? "\u0000" : `line ${i}`,
        fields: null,
      });
    });
    await writer.close();

    const rows = await stored(runs);
    expect(rows.map((r) => r.run_id).sort()).toEqual(runs.filter((id) => id !== guilty).sort());
    expect(warnings).toEqual([expect.objectContaining({ lines: 1, runs: [guilty], msg: expect.stringContaining("1 task log line(s)") })]);
  });
});
