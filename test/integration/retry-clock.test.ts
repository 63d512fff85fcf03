import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ax, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

const HOUR_MS = 3_600_000;
const BACKOFF_MS = 5000;
const realNow = Date.now.bind(Date);

/** Fails its first attempt on a worker whose clock runs an hour ahead of PostgreSQL's. */
const skewed = ax.task({ name: "skewed", retries: 1, retryBackoff: BACKOFF_MS / 1000, jitter: 0 }, () => {
  vi.spyOn(Date, "now").mockImplementation(() => realNow() + HOUR_MS);
  throw new Error("first attempt fails");
});
const skewedFlow = ax.flow({ name: "skewed" }, () => {
  skewed();
});

describe("next_retry_at on PostgreSQL's clock", () => {
  const env = isolate("clock");
  let runtime: Runtime;

  beforeAll(async () => {
    runtime = testRuntime(env, { flows: [skewedFlow] });
    await runtime.start();
  });

  afterAll(async () => {
    vi.restoreAllMocks();
    await runtime?.stop();
    await env.cleanup();
  });

  it("is the backoff after the failed attempt's end as PostgreSQL counts it, whatever the worker's clock says", async () => {
    const runId = await runtime.client().triggerFlow("skewed", null);
    const deadline = realNow() + 20_000;
    let rows: { status: string; delay_ms: number | null }[] = [];
    while (realNow() < deadline) {
      rows = await env.sql(
        `select n.status, extract(epoch from n.next_retry_at - a.finished_at) * 1000 as delay_ms
         from node_runs n join attempts a on a.run_id = n.run_id and a.node_key = n.node_key and a.n = 1
         where n.run_id = $1 and a.finished_at is not null`,
        [runId],
      );
      if (rows.length) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    vi.restoreAllMocks();
    expect(rows[0]?.status).toBe("retrying");
    // The backoff counts from the write, on PostgreSQL's clock; the attempt's end is PostgreSQL's
    // start plus what the worker measured. Neither reads the worker's clock, an hour off: what lies
    // between them is only the write's own latency.
    const delay = Number(rows[0]!.delay_ms);
    expect(delay).toBeGreaterThanOrEqual(BACKOFF_MS);
    expect(delay).toBeLessThan(BACKOFF_MS + 1000);
  });
});
