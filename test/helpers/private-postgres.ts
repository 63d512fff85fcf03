import { execFile } from "node:child_process";
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const BIN = process.env.AX_TEST_PG_BIN ?? "/usr/lib/postgresql/15/bin";

/**
 * A throwaway PostgreSQL cluster owned by this test, so it can be stopped and restarted without
 * touching the shared server other tests use. Runs as the `postgres` OS user (initdb refuses root).
 */
export interface PrivatePostgres {
  port: number;
  /** `postgres://…` of its `postgres` database. */
  url: string;
  /** `pg_ctl restart -m fast`: open connections are cut, the server is back when it resolves. */
  restart(): Promise<void>;
  /** "immediate" is a crash: commits that did not wait for the disk and are not yet written are lost. @defaultValue "fast" */
  stop(mode?: "fast" | "immediate"): Promise<void>;
  start(): Promise<void>;
  /** SIGSTOPs the server and every backend: connections stay open and nothing answers, as a hung host. */
  freeze(): Promise<void>;
  /** SIGCONTs what `freeze` stopped. */
  thaw(): Promise<void>;
  /** Stops it (if running) and deletes its data directory. */
  destroy(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function asPostgres(cmd: string, args: string[]) {
  return run("runuser", ["-u", "postgres", "--", join(BIN, cmd), ...args], { timeout: 60_000 });
}

/**
 * Sends `signal` to the postmaster of `data` and each of its children. A running backend may exit
 * between the listing and the signal (its client disconnected), so a pid that is gone is skipped.
 */
async function signalAll(data: string, signal: "SIGSTOP" | "SIGCONT"): Promise<void> {
  const postmaster = readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0]!.trim();
  const { stdout } = await run("pgrep", ["-P", postmaster]).catch(() => ({ stdout: "" }));
  for (const pid of [postmaster, ...stdout.split("\n").filter(Boolean)]) {
    try {
      process.kill(Number(pid), signal);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
    }
  }
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const root = mkdtempSync(join(tmpdir(), "ax-pg-"));
  chmodSync(root, 0o755);
  const data = join(root, "data");
  const { stdout } = await run("id", ["-u", "postgres"]);
  const { stdout: gid } = await run("id", ["-g", "postgres"]);
  chownSync(root, Number(stdout.trim()), Number(gid.trim()));
  await asPostgres("initdb", ["-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"]);
  const port = await freePort();
  const options = `-p ${port} -k ${root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
  const ctl = (...args: string[]) => asPostgres("pg_ctl", ["-D", data, "-l", join(root, "server.log"), "-w", "-t", "60", ...args]);
  await ctl("-o", options, "start");
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    restart: async () => {
      await ctl("-m", "fast", "-o", options, "restart");
    },
    stop: async (mode = "fast") => {
      await ctl("-m", mode, "stop");
    },
    start: async () => {
      await ctl("-o", options, "start");
    },
    freeze: async () => {
      await signalAll(data, "SIGSTOP");
    },
    thaw: async () => {
      await signalAll(data, "SIGCONT");
    },
    destroy: async () => {
      await signalAll(data, "SIGCONT").catch(() => {});
      await ctl("-m", "immediate", "stop").catch(() => {});
      rmSync(root, { recursive: true, force: true });
    },
  };
}
