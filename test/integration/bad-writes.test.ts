import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ax, AxPayloadError, type Client, type Runtime, type RunInfo } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

type Mode = "ok" | "nul_result" | "surrogate_result" | "emoji_throw" | "nul_throw";
interface Input {
  marker: string;
  mode: Mode;
  note?: string;
}

const EMOJI = "😀";

const work = ax.task({ name: "bw_work", retries: 0 }, async (input: Input) => {
  // Long enough that many attempts are running, and finishing, at once: their writes share batches.
  await sleep(300);
  switch (input.mode) {
    case "ok":
      return { marker: input.marker, note: input.note ?? null };
    case "nul_result":
      return { marker: input.marker, text: "bad\u0000" };
    case "surrogate_result":
      return { marker: input.marker, text: EMOJI.slice(0, 1) };
    case "emoji_throw":
      // The odd-length prefix puts the 2,000-unit cut inside an emoji.
      throw new Error(`${input.marker}!${EMOJI.repeat(3000)}`);
    case "nul_throw":
      throw new Error(`${input.marker} bad\u0000byte ${EMOJI.slice(1)}`);
  }
});
const mixedFlow = ax.flow<Input>({ name: "bw_flow" }, (input) => {
  work(input);
});

const MARKER = /mk-\d{3}-[0-9a-f]{8}/g;
const markerOf = (i: number) => `mk-${String(i).padStart(3, "0")}-${randomBytes(4).toString("hex")}`;

describe("bad writes: only the bad ones fail, with their own errors only", () => {
  const env = isolate("badwrites");
  let runtime: Runtime;
  let client: Client;

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [mixedFlow], maxConcurrency: 60 });
    await runtime.start();
    client = runtime.client();
  });

  afterAll(async () => {
    await runtime?.stop();
    await env.cleanup();
  });

  it("50 triggers (5 unstorable) and 50 tasks (5 bad results or throws): exactly the 10 bad ones fail", async () => {
    const badPayloads = new Map<number, unknown>([
      [4, { note: "nul\u0000" }],
      [13, { note: EMOJI.slice(1) }],
      [22, { nested: [{ "key\u0000": 1 }] }],
      [31, { note: `${EMOJI.slice(0, 1)} tail` }],
      [47, { deep: { list: ["fine", "x\u0000y"] } }],
    ]);
    const badModes = new Map<number, Mode>([
      [52, "nul_result"],
      [61, "surrogate_result"],
      [70, "emoji_throw"],
      [83, "nul_throw"],
      [99, "emoji_throw"],
    ]);
    const markers = Array.from({ length: 100 }, (_, i) => markerOf(i));
    const inputs = markers.map((marker, i) => ({
      marker,
      mode: badModes.get(i) ?? "ok",
      note: `payload of ${marker}`,
      ...(badPayloads.get(i) as object),
    }));

    const triggered = await Promise.all(
      inputs.map((input) =>
        client.triggerFlow("bw_flow", input).then(
          (runId) => ({ runId }),
          (error: unknown) => ({ error }),
        ),
      ),
    );

    // Triggers: exactly the 5 unstorable payloads are refused, each naming its own path and nobody's data.
    const refused = triggered.flatMap((t, i) => ("error" in t ? [i] : []));
    expect(refused).toEqual([...badPayloads.keys()]);
    for (const i of refused) {
      const error = (triggered[i] as { error: Error }).error;
      expect(error).toBeInstanceOf(AxPayloadError);
      expect(error.message).toMatch(
        /payload cannot be stored in PostgreSQL: \$\S+ (is a key that )?contains a (NUL character|lone UTF-16 surrogate).*Remove the character/,
      );
      expect(error.message.match(MARKER) ?? []).toEqual([]);
    }

    // Runs: the 5 bad tasks fail with a clear error, the other 90 succeed.
    const runIds = new Map<string, number>();
    triggered.forEach((t, i) => {
      if ("runId" in t) runIds.set(t.runId, i);
    });
    // One after the other: 95 waits polling at once load PostgreSQL more than the runs do.
    const runs: RunInfo[] = [];
    for (const runId of runIds.keys()) runs.push(await client.waitForRun(runId, { timeout: "90s" }));
    const failed = runs
      .filter((run) => run.status !== "success")
      .map((run) => runIds.get(run.id)!)
      .sort((a, b) => a - b);
    expect(failed).toEqual([...badModes.keys()]);
    expect(runs.filter((run) => run.status === "success")).toHaveLength(90);
    for (const run of runs) {
      const i = runIds.get(run.id)!;
      const node = run.tasks[0]!;
      if (!badModes.has(i)) {
        expect(node.result).toEqual({ marker: markers[i], note: `payload of ${markers[i]}` });
        continue;
      }
      expect(run.status).toBe("failed");
      expect(node.status).toBe("failed");
      const message = node.error!.message;
      if (badModes.get(i)!.endsWith("_result")) {
        expect(message).toMatch(
          /^result of task "bw_work" cannot be stored in PostgreSQL: \$\.text contains a (NUL character|lone UTF-16 surrogate).*Remove the character/,
        );
      } else {
        expect(message.startsWith(markers[i]!)).toBe(true);
      }
      if (badModes.get(i) === "emoji_throw") expect(message.length).toBeGreaterThan(1990);
      if (badModes.get(i) === "nul_throw") expect(message).toBe(`${markers[i]} bad\uFFFDbyte \uFFFD`);
    }

    // No stored error, on a node or an attempt, holds another run's marker; and nothing is left open.
    const stored = await env.sql<{ run_id: string; error: string }>(
      "select run_id, error::text as error from node_runs where error is not null union all select run_id, error::text from attempts where error is not null",
    );
    expect(stored.length).toBeGreaterThanOrEqual(10);
    for (const row of stored) {
      const own = markers[runIds.get(row.run_id)!];
      for (const found of row.error.match(MARKER) ?? []) expect(found).toBe(own);
    }
    expect(await env.sql("select run_id, node_key from node_runs where status = 'running'")).toEqual([]);
    expect(await env.sql("select id from runs where status in ('pending', 'running')")).toEqual([]);
    expect(await env.sql("select run_id from attempts where finished_at is null")).toEqual([]);
  });
});
