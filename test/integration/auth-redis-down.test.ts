import { describe, expect, it } from "vitest";
import { ax } from "ax-scheduler";
import { runtimeOnPrivateRedis } from "../helpers/private-redis-runtime.js";
import { tokenBeforeStart } from "../helpers/tokens.js";

const step = ax.task({ name: "auth_down_step" }, () => null);
const flow = ax.flow({ name: "auth_down_flow" }, () => {
  step();
});

/**
 * The wrong-token limit is counted in Redis; while Redis is away it must not hold requests: a
 * valid token is still served, a wrong one still refused, each within a second or so.
 */
describe("token auth with Redis down", () => {
  const { runtime, redisDown, redisBack } = runtimeOnPrivateRedis(
    "authdown",
    { flows: [flow], roles: ["coordinator", "api"], port: 0, insecureNoAuth: false, logLevel: "fatal" },
    1,
    async (env) => {
      token = await tokenBeforeStart(env, "auth_down_reader");
    },
  );
  let token = "";

  const get = async (path: string, token?: string) => {
    const started = Date.now();
    const response = await fetch(`${runtime().url}${path}`, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
      signal: AbortSignal.timeout(20_000),
    });
    await response.text();
    return { status: response.status, ms: Date.now() - started };
  };

  it("serves valid tokens and refuses wrong ones without waiting for Redis, and counts again once it is back", {
    timeout: 90_000,
  }, async () => {
    expect((await get("/api/runs", token)).status).toBe(200);

    await redisDown();
    for (let i = 0; i < 5; i++) {
      const served = await get("/api/runs", token);
      expect(served.status).toBe(200);
      expect(served.ms).toBeLessThan(2000);
      const wrong = await get("/api/runs", "ax_wrong_token");
      // Not 429: wrong tokens are not counted while Redis is away, but every one is refused.
      expect(wrong.status).toBe(401);
      expect(wrong.ms).toBeLessThan(2000);
    }

    await redisBack();
    let answer = await get("/api/runs", token);
    for (let i = 0; i < 50 && answer.status !== 200; i++) answer = await get("/api/runs", token);
    const statuses: number[] = [];
    for (let i = 0; i < 100 && !statuses.includes(429); i++) {
      statuses.push((await get("/api/runs", "ax_wrong_token")).status);
      if (!statuses.includes(429)) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(statuses).toContain(429);
  });
});
