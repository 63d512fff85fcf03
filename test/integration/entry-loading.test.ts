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
  const workers: Child[] = [];

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    rmSync(scratch, { recursive: true, force: true });
    await env.cleanup();
  });

  it("TypeScript entries of a CommonJS package (no type: module), .ts and .cts, are served and run, thread tasks and ax.context() included", async () => {
    for (const entry of ["flows.ts", "flows.cts"]) {
      const worker = startAx(["worker", `test/fixtures/entries/commonjs/${entry}`, ...connection], { AX_LOG_LEVEL: "info" });
      workers.push(worker);
      await worker.waitFor(/ax worker started/, 60_000);
    }
    const client = new Client({ storage: env.storage, redis: env.redis, prefix: env.prefix });
    try {
      const [ts, cts] = await Promise.all([client.triggerFlow("cjs_flow", 21), client.triggerFlow("cts_flow", 5)]);
      const runs = await Promise.all([client.waitForRun(ts, { timeout: "30s" }), client.waitForRun(cts, { timeout: "30s" })]);
      expect(runs.map((run) => run.tasks.map((t) => [t.key, t.status, t.result, t.error?.message]))).toEqual([
        [
          ["cjs_double", "success", 42, undefined],
          ["cjs_add_one", "success", 43, undefined],
        ],
        [
          ["cts_triple", "success", 15, undefined],
          ["cts_subtract_one", "success", 14, undefined],
        ],
      ]);
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

  it("a JavaScript ES module's syntax error names file:line:column too, which Node's own error leaves out", async () => {
    const entry = join(scratch, "syntax.mjs");
    writeFileSync(entry, 'import { ax } from "ax-scheduler";\n\nconst broken = {;\nexport { ax, broken };\n');
    const result = await runAx(["trigger", "broken_flow", "--entry", entry, ...connection]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`AxEntryError: ${entry} could not be compiled: ${entry}:3:17: Unexpected token ';'.`);
  });

  it("an entry whose own code throws at import is AxEntryError with that error's message", async () => {
    const entry = join(scratch, "throws.ts");
    writeFileSync(entry, 'if (!process.env.INVOICE_API_URL_UNSET) throw new Error("INVOICE_API_URL is not set");\nexport {};\n');
    const result = await runAx(["trigger", "some_flow", "--entry", entry, ...connection]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`AxEntryError: ${entry} threw while loading: INVOICE_API_URL is not set.`);
  });
});
