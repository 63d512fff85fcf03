import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Client } from "ax-scheduler";
import { isolate } from "../helpers/isolated.js";
import { runAx, startAx, type Child } from "../helpers/processes.js";

/** Entry modules as services write them: CommonJS TypeScript, and ones that fail to load. */
describe("ax <command> <entry>: loading the entry module", { timeout: 120_000 }, () => {
  const env = isolate("entryload");
  const scratch = mkdtempSync(join(tmpdir(), "ax-entry-"));
  const connection = ["--storage", env.storage, "--prefix", env.prefix];
  let worker: Child | undefined;

  afterAll(async () => {
    await worker?.stop();
    rmSync(scratch, { recursive: true, force: true });
    await env.cleanup();
  });

  it("a TypeScript entry in a CommonJS package (no type: module) is served and runs", async () => {
    worker = startAx(["worker", "test/fixtures/entries/commonjs/flows.ts", ...connection], { AX_LOG_LEVEL: "info" });
    await worker.waitFor(/ax worker started/, 60_000);
    const client = new Client({ storage: env.storage, redis: env.redis, prefix: env.prefix });
    try {
      const runId = await client.triggerFlow("cjs_flow", 21);
      const run = await client.waitForRun(runId, { timeout: "30s" });
      expect(run.status).toBe("success");
      expect(run.tasks[0]?.result).toBe(42);
    } finally {
      await client.close();
    }
  });

  it("a syntax error is AxEntryError naming file:line:column", async () => {
    const entry = join(scratch, "syntax.ts");
    writeFileSync(entry, 'import { ax } from "ax-scheduler";\n\nexport const broken = ax.task({ name: "broken" }, () => 1;\n');
    const result = await runAx(["trigger", "broken_flow", "--entry", entry, ...connection]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`AxEntryError: ${entry} could not be compiled: ${entry}:3:`);
    expect(result.stderr).toContain('Expected ")" but found ";"');
    expect(result.stderr).not.toContain("TransformError");
  });

  it("an entry whose own code throws at import is AxEntryError with that error's message", async () => {
    const entry = join(scratch, "throws.ts");
    writeFileSync(entry, 'if (!process.env.INVOICE_API_URL_UNSET) throw new Error("INVOICE_API_URL is not set");\nexport {};\n');
    const result = await runAx(["trigger", "some_flow", "--entry", entry, ...connection]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`AxEntryError: ${entry} threw while loading: INVOICE_API_URL is not set.`);
  });
});
