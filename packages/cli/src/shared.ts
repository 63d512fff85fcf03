import { existsSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import type { Client, Flow } from "ax-scheduler";
import type { DataDirHolder } from "@ax/common";
import { AxNoEmbeddedHistoryError, DEFAULT_DATA_DIR } from "@ax/common";
import { connectionFlags, parseFlags, type ConnectionFlags } from "./options.js";
import type { AdminApi } from "./admin-api.js";
import type { ConfigApi } from "./config-commands.js";
import type { RunsApi } from "./runs-api.js";
import type { TokenApi } from "./token-commands.js";

export function connection(program: Command): ConnectionFlags {
  const o = program.opts();
  // A wrong value is named where it was set: a flag, or the environment variable behind its default.
  const names: Record<string, string> = {};
  const fromEnv = (key: string, flag: unknown, variable: string): string | undefined => {
    if (flag !== undefined) return flag as string;
    names[key] = variable;
    // An empty variable (`DATABASE_URL=` in an env file) is an unset one.
    return process.env[variable] || undefined;
  };
  return parseFlags(
    connectionFlags,
    {
      storage: fromEnv("storage", o.storage, "DATABASE_URL"),
      redis: fromEnv("redis", o.redis, "REDIS_URL"),
      prefix: fromEnv("prefix", o.prefix, "AX_PREFIX"),
      dataDir: o.dataDir,
    },
    undefined,
    names,
  );
}

/**
 * A Client on the global connection flags (applying `flows`' key functions), closed after `fn`
 * whatever happens. An embedded data directory held by an `ax dev` is reached through that
 * process's HTTP API (which applies its own flows' key functions): PGlite serves one process only.
 */
export function withClient(program: Command, fn: (client: RunsApi) => Promise<void>, flows?: Flow<any>[]): Promise<void> {
  return withRoutedApi(program, httpRunsApi, (client): RunsApi => client, fn, flows);
}

/**
 * `fn` gets `viaClient` of a Client on the global connection flags (applying `flows`' key
 * functions), closed after it, or, when an `ax dev` holds the embedded data directory, `viaHttp`
 * of that process's API.
 */
async function withRoutedApi<T>(
  program: Command,
  viaHttp: (holder: DataDirHolder & { api: string }) => Promise<T>,
  viaClient: (client: Client) => T,
  fn: (api: T) => Promise<void>,
  flows?: Flow<any>[],
): Promise<void> {
  const flags = connection(program);
  refuseMissingDataDir(flags);
  const holder = await devHolder(flags);
  if (holder) {
    await fn(await viaHttp(holder));
    return;
  }
  const client = await newClient({ ...flags, flows });
  try {
    await fn(viaClient(client));
  } finally {
    await client.close();
  }
}

/** The stored config versions, on the storage or through the API of the `ax dev` holding it. */
export function withConfigApi(program: Command, fn: (api: ConfigApi) => Promise<void>): Promise<void> {
  const viaHttp = async (holder: DataDirHolder & { api: string }) => new (await import("./http-config.js")).HttpConfigApi(holder);
  return withRoutedApi(program, viaHttp, (client) => client.config, fn);
}

/** API tokens, on the storage or through the API of the process holding it. */
export function withTokenApi(program: Command, fn: (api: TokenApi) => Promise<void>): Promise<void> {
  const viaHttp = async (holder: DataDirHolder & { api: string }) => new (await import("./http-tokens.js")).HttpTokenApi(holder);
  return withRoutedApi(program, viaHttp, (client) => client.tokens, fn);
}

/** The audit log, pruning, and the alerts' history and mutes, on the storage or through the API of the `ax dev` holding it. */
export function withAdminApi(program: Command, fn: (api: AdminApi) => Promise<void>): Promise<void> {
  const viaHttp = async (holder: DataDirHolder & { api: string }) => new (await import("./http-admin.js")).HttpAdminApi(holder);
  return withRoutedApi(program, viaHttp, (client) => client, fn);
}

/**
 * Embedded history lives in a directory relative to where `ax dev` ran: a command run elsewhere
 * would create an empty one and answer as if the history were lost.
 */
function refuseMissingDataDir(flags: ConnectionFlags): void {
  if (flags.storage) return;
  const dataDir = resolve(flags.dataDir ?? DEFAULT_DATA_DIR);
  if (!existsSync(dataDir)) throw new AxNoEmbeddedHistoryError(dataDir);
}

// The client, the storage layer and the HTTP client are loaded by the command that uses one, so
// that `ax --help` and a refused flag answer without loading them (about a second of CPU).
async function newClient(options: ConnectionFlags & { flows?: Flow<any>[] | undefined }): Promise<Client> {
  const [{ Client }, { plainLogger }] = await Promise.all([import("ax-scheduler/client"), import("./plain-log.js")]);
  return new Client({ ...options, logger: plainLogger() });
}

async function httpRunsApi(holder: DataDirHolder & { api: string }): Promise<RunsApi> {
  const [{ HttpRunsApi }, { plainLogger }] = await Promise.all([import("./http-client.js"), import("./plain-log.js")]);
  return new HttpRunsApi(holder, plainLogger());
}

/** The live process holding the embedded data directory, when it serves it over HTTP (an `ax dev`). */
async function devHolder(flags: ConnectionFlags): Promise<(DataDirHolder & { api: string; dataDir: string }) | undefined> {
  if (flags.storage) return undefined;
  const dataDir = resolve(flags.dataDir ?? DEFAULT_DATA_DIR);
  // The lock file alone: the storage layer (drizzle, pg, PGlite) is not needed to read it.
  const { dataDirHolder } = await import("@ax/store/data-dir-lock");
  const holder = dataDirHolder(dataDir);
  return holder?.api ? { ...holder, api: holder.api, dataDir } : undefined;
}
