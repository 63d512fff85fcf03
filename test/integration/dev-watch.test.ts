import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it } from "vitest";
import { isolate } from "../helpers/isolated.js";
import { AX_BIN, freePort, REPO_ROOT, runAx, startAx } from "../helpers/processes.js";

const SDK = pathToFileURL(join(REPO_ROOT, "packages/sdk/dist/index.js")).href;

/** A project of its own (package.json at its root), as a user's service is: the flow in one file, its task in another. */
function writeProject(dir: string, answer: string): void {
  writeFileSync(join(dir, "package.json"), '{ "type": "module" }\n');
  mkdirSync(join(dir, "src"), { recursive: true });
  writeTask(dir, answer);
  writeFileSync(
    join(dir, "src/flows.mjs"),
    `import { ax } from "${SDK}";\nimport { answer } from "./tasks.mjs";\nexport const devWatchFlow = ax.flow({ name: "dev_watch_flow" }, () => answer());\n`,
  );
}

function writeTask(dir: string, answer: string): void {
  writeFileSync(
    join(dir, "src/tasks.mjs"),
    `import { ax } from "${SDK}";\nexport const answer = ax.task({ name: "dev_watch_answer" }, () => ${JSON.stringify(answer)});\n`,
  );
}

const count = (text: string, pattern: RegExp) => text.match(new RegExp(pattern.source, "g"))?.length ?? 0;

describe("ax dev --watch", { timeout: 120_000 }, () => {
  const env = isolate("devwatch");
  const dir = mkdtempSync(join(tmpdir(), "ax-dev-watch-"));
  const connection = ["--storage", env.storage, "--prefix", env.prefix];

  afterAll(async () => {
    await env.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  async function answerOfNewRun(): Promise<unknown> {
    const triggered = await runAx([...connection, "trigger", "dev_watch_flow", "--wait"]);
    expect(triggered.stderr).toBe("");
    const [row] = await env.sql<{ result: unknown }>(
      "select n.result from node_runs n join runs r on r.id = n.run_id order by r.created_at desc limit 1",
    );
    return row?.result;
  }

  it("runs the edited code after a save, waits out a syntax error, and never outlives its supervisor", async () => {
    writeProject(dir, "first");
    const port = await freePort();
    const dev = startAx([...connection, "dev", join(dir, "src/flows.mjs"), "--watch", "--port", String(port)], { AX_LOG_LEVEL: "info" });
    try {
      await dev.waitFor(/ax dev started/, 80_000);
      expect(await answerOfNewRun()).toBe("first");

      writeTask(dir, "second");
      await dev.waitFor(/src\/tasks\.mjs changed: restarting ax dev/, 10_000);
      const started = Date.now();
      while (count(dev.output(), /ax dev started/) < 2 && Date.now() - started < 30_000) await sleep(50);
      expect(await answerOfNewRun()).toBe("second");

      writeFileSync(join(dir, "src/tasks.mjs"), "export const answer = (;\n");
      await dev.waitFor(/waiting for a change to start it again/, 30_000);
      writeTask(dir, "third");
      while (count(dev.output(), /ax dev started/) < 3 && Date.now() - started < 60_000) await sleep(50);
      expect(await answerOfNewRun()).toBe("third");

      // A supervisor killed outright takes its ax dev down with it: the port is free again.
      dev.process.kill("SIGKILL");
      const killed = Date.now();
      let listening = true;
      while (listening && Date.now() - killed < 15_000) {
        listening = await fetch(`http://127.0.0.1:${port}/healthz`).then(
          () => true,
          () => false,
        );
        if (listening) await sleep(100);
      }
      expect(listening).toBe(false);
    } finally {
      await dev.stop();
    }
  });

  it("an ax dev whose watcher died while it was still loading exits instead of serving orphaned", async () => {
    writeProject(dir, "first");
    const port = await freePort();
    const child = spawn(process.execPath, [AX_BIN, ...connection, "dev", join(dir, "src/flows.mjs"), "--port", String(port)], {
      cwd: REPO_ROOT,
      env: { ...process.env, AX_DEV_SUPERVISED: "1" },
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    let output = "";
    child.stderr!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    // As a watcher killed outright a moment after starting it: the channel closes before ax dev listens.
    child.disconnect();
    const [code] = (await once(child, "exit")) as [number | null];
    expect(code).toBe(1);
    expect(output).toContain("ax dev: its watcher (ax dev --watch) is gone; exiting");
  });

  it("ax dev --watch refuses a bad storage URL before it watches anything: a usage error, exit 1", async () => {
    writeProject(dir, "first");
    const refused = await runAx(["dev", join(dir, "src/flows.mjs"), "--watch"], { DATABASE_URL: "mysql://db.example/app" }, 30_000);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("AxUsageError");
    expect(refused.stderr).toContain("DATABASE_URL");
    expect(refused.stdout + refused.stderr).not.toContain("waiting for a change");
  });
});
