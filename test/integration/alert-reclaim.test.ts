import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { ax, type Runtime } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { testRuntime } from "../helpers/runtime.js";

const quiet = ax.task({ name: "reclaim_quiet" }, () => null);
const quietFlow = ax.flow({ name: "reclaim_quiet_flow" }, () => quiet());

/** Events a coordinator took for alert evaluation and never acknowledged (it died) are taken over. */
describe("alert events left pending by a coordinator that died", () => {
  const env = isolate("reclaim");
  const dir = mkdtempSync(join(tmpdir(), "ax-reclaim-"));
  const redis = new Redis(env.redis);
  let runtime: Runtime | undefined;

  afterAll(async () => {
    await runtime?.stop();
    redis.disconnect();
    rmSync(dir, { recursive: true, force: true });
    await env.cleanup();
  });

  it("are all taken over by the next coordinator to start, past the first page of 100", async () => {
    const stream = `${env.prefix}:ax:events`;
    await redis.xgroup("CREATE", stream, "ax:alerts", "0", "MKSTREAM");
    const events = 250;
    for (let i = 0; i < events; i++) {
      await redis.xadd(stream, "*", "event", JSON.stringify({ name: "run_started", runId: `r${i}`, flow: "gone_flow", at: Date.now() }));
    }
    // The dead coordinator read them all and acknowledged none, a minute ago.
    const read = (await redis.xreadgroup("GROUP", "ax:alerts", "dead", "COUNT", events, "STREAMS", stream, ">")) as [string, [string][]][];
    const ids = read[0]![1].map(([id]) => id);
    expect(ids).toHaveLength(events);
    await redis.xclaim(stream, "ax:alerts", "dead", 0, ...ids, "IDLE", 60_000, "JUSTID");

    const file = join(dir, "runtime.yaml");
    writeFileSync(file, ["alerts:", "  default:", "    sinks: [{ type: log, level: warn }]", ""].join("\n"));
    runtime = testRuntime(env, { flows: [quietFlow], config: file, roles: ["coordinator"] });
    await runtime.start();
    await expect.poll(async () => ((await redis.xpending(stream, "ax:alerts")) as [number])[0], { timeout: 10_000 }).toBe(0);
  });
});
