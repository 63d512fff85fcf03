import { resolve } from "node:path";
import type { Command } from "commander";
import { Client, type Flow } from "ax-scheduler";
import { dataDirHolder } from "@ax/store";
import { HttpRunsApi } from "./http-client.js";
import { connectionFlags, parseFlags, type ConnectionFlags } from "./options.js";
import type { RunsApi } from "./runs-api.js";

export function connection(program: Command): ConnectionFlags {
  const o = program.opts();
  return parseFlags(
    connectionFlags,
    {
      storage: o.storage ?? process.env.DATABASE_URL,
      redis: o.redis ?? process.env.REDIS_URL,
      prefix: o.prefix ?? process.env.AX_PREFIX,
      dataDir: o.dataDir,
    },
    undefined,
  );
}

/** Where `ax dev` keeps its embedded history when no --data-dir is given (as `openStore` does). */
const DEFAULT_DATA_DIR = ".ax/data";

/**
 * A Client on the global connection flags (applying `flows`' key functions), closed after `fn`
 * whatever happens. An embedded data directory held by an `ax dev` is reached through that
 * process's HTTP API (which applies its own flows' key functions): PGlite serves one process only.
 */
export async function withClient(program: Command, fn: (client: RunsApi) => Promise<void>, flows?: Flow<any>[]): Promise<void> {
  const flags = connection(program);
  const holder = flags.storage ? undefined : dataDirHolder(resolve(flags.dataDir ?? DEFAULT_DATA_DIR));
  const client: RunsApi = holder?.api ? new HttpRunsApi({ ...holder, api: holder.api }) : new Client({ ...flags, flows });
  try {
    await fn(client);
  } finally {
    await client.close();
  }
}

/**
 * A Client straight on the storage, for commands the HTTP API of `ax dev` does not serve (an
 * embedded directory held by another process is refused with AxDataDirLockedError, which says so).
 */
export async function withDirectClient(program: Command, fn: (client: Client) => Promise<void>): Promise<void> {
  const client = new Client(connection(program));
  try {
    await fn(client);
  } finally {
    await client.close();
  }
}
