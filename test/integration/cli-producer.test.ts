import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { isolate } from "../helpers/isolated.js";
import { AX_BIN, freePort, REPO_ROOT, runAx, startAx } from "../helpers/processes.js";

const env = isolate("cliproducer");
const connection = ["--storage", env.storage, "--prefix", env.prefix];

afterAll(async () => {
  await env.cleanup();
});

async function trigger(payload: unknown, ...flags: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      AX_BIN,
      "trigger",
      "keyed_flow",
      "--entry",
      "test/fixtures/keyed-flow.ts",
      "--payload",
      JSON.stringify(payload),
      ...flags,
      ...connection,
    ],
    { cwd: REPO_ROOT, timeout: 80_000 },
  );
  return stdout.trim();
}

describe("ax server <entry> and ax trigger --entry apply the flow's key functions", { timeout: 120_000 }, () => {
  it("the same event, over HTTP twice and from the CLI twice, is one run", async () => {
    const port = await freePort();
    const server = startAx(["server", "test/fixtures/keyed-flow.ts", "--port", String(port), "--insecure-no-auth", ...connection], {
      AX_LOG_LEVEL: "info",
    });
    try {
      await server.waitFor(/ax server started/, 80_000);
      const post = async () => {
        const response = await fetch(`http://127.0.0.1:${port}/api/flows/keyed_flow/runs`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ payload: { event_id: "42" } }),
        });
        return { status: response.status, body: (await response.json()) as { runId: string; created: boolean } };
      };
      const first = await post();
      expect(first.status).toBe(201);
      const second = await post();
      expect(second).toEqual({ status: 200, body: { runId: first.body.runId, created: false, samePayload: true } });
      const run = (await (await fetch(`http://127.0.0.1:${port}/api/runs/${first.body.runId}`)).json()) as { businessKey: string };
      expect(run.businessKey).toBe("biz-42");

      expect(await trigger({ event_id: "42" })).toBe(first.body.runId);
      const other = await trigger({ event_id: "43" });
      expect(other).not.toBe(first.body.runId);
      expect(await trigger({ event_id: "43" })).toBe(other);

      const later = await trigger({ event_id: "44" }, "--delay", "10m", "--priority", "3");
      const delayed = (await (await fetch(`http://127.0.0.1:${port}/api/runs/${later}`)).json()) as {
        status: string;
        priority: number;
        runAt: string;
      };
      expect(delayed.status).toBe("pending");
      expect(delayed.priority).toBe(3);
      expect(Date.parse(delayed.runAt) - Date.now()).toBeGreaterThan(8 * 60_000);

      // Without the flow's code the keys cannot be computed: the trigger goes through, and says so.
      // A warning, shown at the commands' default level (the tests run at error).
      const warnings = { AX_LOG_LEVEL: "warn" };
      const unkeyed = await runAx([...connection, "trigger", "keyed_flow", "--payload", '{"event_id":"45"}'], warnings);
      expect(unkeyed.code).toBe(0);
      // One plain line, as the command's other warnings.
      expect(unkeyed.stderr).toMatch(
        /^ax: flow "keyed_flow" computes its idempotencyKey and businessKey in code, which this client does not have: its runs are triggered without them .*ax trigger --entry <file> or --idempotency-key \/ --business-key\.\n$/,
      );
      // A trigger refused for its payload says only why.
      const refused = await runAx([...connection, "trigger", "keyed_flow", "--payload", '{"event_id":"a\\u0000"}'], warnings);
      expect(refused.code).toBe(1);
      expect(refused.stderr.trim().split("\n")).toHaveLength(1);
      expect(refused.stderr).toMatch(/^AxPayloadError: /);
      const halfKeyed = await runAx(
        [...connection, "trigger", "keyed_flow", "--payload", '{"event_id":"46"}', "--idempotency-key", "k46"],
        warnings,
      );
      expect(halfKeyed.stderr).toContain('flow "keyed_flow" computes its businessKey in code');
      // The idempotency key was given: a repeated event is the same run, and the warning does not say otherwise.
      expect(halfKeyed.stderr).toContain("(its runs cannot be found by that key)");
      expect(unkeyed.stderr).toContain("(a repeated event makes a second run)");
      const keyed = await runAx([
        ...connection,
        "trigger",
        "keyed_flow",
        "--payload",
        '{"event_id":"47"}',
        "--idempotency-key",
        "k47",
        "--business-key",
        "b47",
      ]);
      expect(keyed).toMatchObject({ code: 0, stderr: "" });
      const runId = keyed.stdout.trim();
      // The key again: its run is returned. Same payload, nothing to say; another payload was not used, and stderr says so.
      const again = ["trigger", "keyed_flow", "--idempotency-key", "k47", "--business-key", "b47", "--payload"];
      await expect(runAx([...connection, ...again, '{"event_id":"47"}'])).resolves.toMatchObject({
        code: 0,
        stdout: `${runId}\n`,
        stderr: "",
      });
      // The tests' log level (error) would hide the warning: the command's default is warn.
      const differing = await runAx([...connection, ...again, '{"event_id":"48"}'], { AX_LOG_LEVEL: "warn" });
      expect(differing).toMatchObject({ code: 0, stdout: `${runId}\n` });
      expect(differing.stderr).toBe(
        `ax: idempotency key "k47" of flow "keyed_flow" already made run ${runId}, with another payload: that run stands and this payload is not used. If the events differ, give them different keys.\n`,
      );
    } finally {
      await server.stop();
    }
  });
});
