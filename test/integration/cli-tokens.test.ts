import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { isolate } from "../helpers/isolated.js";
import { AX_BIN, freePort, REPO_ROOT, startAx } from "../helpers/processes.js";

const env = isolate("clitokens");
const connection = ["--storage", env.storage, "--prefix", env.prefix];

async function ax(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [AX_BIN, ...connection, ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, NO_COLOR: "1" },
      timeout: 80_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

afterAll(async () => {
  await env.cleanup();
});

describe("ax token, ax audit, ax server without tokens", { timeout: 180_000 }, () => {
  it("the server refuses to start with no token; a created token opens it; revoke closes it; the audit log has both", async () => {
    const refused = await ax("server", "--port", "0");
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("AxNoTokensError");
    expect(refused.stderr).toContain("ax token create");
    expect((await ax("audit")).stdout).toContain("no audit entries");

    const created = await ax("token", "create", "--name", "ops", "--scope", "read", "--expires", "30d");
    expect(created.code).toBe(0);
    const token = created.stdout.trim();
    expect(token).toMatch(/^ax_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    expect(created.stderr).toContain("not shown again");
    expect((await ax("token", "create", "--name", "ops", "--scope", "admin")).stderr).toContain("AxTokenNameError");

    const port = await freePort();
    // The port from the environment, as a container or a .env file sets it.
    const server = startAx(["server", ...connection], { AX_LOG_LEVEL: "info", AX_PORT: String(port) });
    try {
      await server.waitFor(/ax server started/, 80_000);
      const runs = (authorization?: string) =>
        fetch(`http://127.0.0.1:${port}/api/runs`, { headers: authorization ? { authorization } : {} }).then((r) => r.status);
      expect(await runs()).toBe(401);
      expect(await runs(`Bearer ${token}`)).toBe(200);
      const list = await ax("token", "list");
      expect(list.stdout).toMatch(/^ops\s+read\s+created \S+\s+last used \d{4}-\S+\s+expires \d{4}-/m);
      expect((await ax("token", "revoke", "ops")).stdout).toContain('token "ops" revoked');
      expect(await runs(`Bearer ${token}`)).toBe(401);
    } finally {
      await server.stop();
    }
    type Entry = { id: number; actor: string; action: string; target: string };
    const audit = JSON.parse((await ax("audit", "--json")).stdout) as Entry[];
    expect(audit.map((e) => `${e.action} ${e.target}`)).toEqual(["token.revoke ops", "token.create ops"]);
    expect(audit[0]!.actor).toMatch(/^cli:/);
    // Paged by id: the entries older than the newest one.
    const older = JSON.parse((await ax("audit", "--before", String(audit[0]!.id), "--json")).stdout) as Entry[];
    expect(older.map((e) => e.action)).toEqual(["token.create"]);
    // Filtered: one action, a family of them, an actor.
    const only = async (...args: string[]) => (JSON.parse((await ax("audit", ...args, "--json")).stdout) as Entry[]).map((e) => e.action);
    expect(await only("--action", "token.create")).toEqual(["token.create"]);
    expect(await only("--action", "token")).toEqual(["token.revoke", "token.create"]);
    expect(await only("--action", "tok")).toEqual([]);
    expect(await only("--actor", "nobody")).toEqual([]);
    expect(await only("--actor", audit[0]!.actor)).toEqual(["token.revoke", "token.create"]);
    expect((await ax("audit", "--limit", "1")).stdout).toMatch(
      new RegExp(`^#${audit[0]!.id}  \\d{4}-\\S+  cli:\\S+\\s+token\\.revoke\\s+ops`, "m"),
    );
    expect(server.output()).not.toContain(token);
  });
});
