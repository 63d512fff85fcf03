import { desc, eq, lt, sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import { codeOptions, configVersions, workers } from "../schema/index.js";
import type { Json } from "../types.js";
import { lockKey, rows } from "./raw.js";

export interface ConfigVersion {
  version: number;
  yaml: string;
  parsed: Json;
  author: string;
  file: string;
  createdAt: Date;
}

export interface NewConfigVersion {
  yaml: string;
  parsed: Json;
  author: string;
  file: string;
}

/**
 * Under the config versions' lock, so that no other version is stored between the two: `version`
 * stored, unless `stands(newest)` says the newest stored version stands instead (answered as `newest`).
 */
async function insertUnlessNewestStands(
  db: Db,
  version: NewConfigVersion,
  stands: (newest: ConfigVersion | undefined) => boolean,
): Promise<{ stored?: ConfigVersion; newest?: ConfigVersion }> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(${lockKey("ax.config_versions")})`);
    const [newest] = await tx.select().from(configVersions).orderBy(desc(configVersions.version)).limit(1);
    if (stands(newest)) return { newest };
    const [row] = await tx.insert(configVersions).values(version).returning();
    return { stored: row! };
  });
}

export async function insertConfigVersion(db: Db, version: NewConfigVersion): Promise<ConfigVersion> {
  return (await insertUnlessNewestStands(db, version, () => false)).stored!;
}

/**
 * Stores `version` if the newest stored version is still `after` (an edit of that version);
 * answers undefined, storing nothing, when another was stored since.
 */
export async function insertConfigVersionAfter(db: Db, after: number, version: NewConfigVersion): Promise<ConfigVersion | undefined> {
  return (await insertUnlessNewestStands(db, version, (newest) => (newest?.version ?? 0) !== after)).stored;
}

/**
 * Stores `version` as the first one unless a version exists already (two Runtimes starting with
 * a file on an empty store store it once); answers the newest version either way.
 */
export async function insertFirstConfigVersion(db: Db, version: NewConfigVersion): Promise<ConfigVersion> {
  const { stored, newest } = await insertUnlessNewestStands(db, version, (newest) => newest !== undefined);
  return (stored ?? newest)!;
}

export async function latestConfigVersion(db: Db): Promise<ConfigVersion | undefined> {
  const [row] = await db.select().from(configVersions).orderBy(desc(configVersions.version)).limit(1);
  return row;
}

/** The newest version number (0 when none is stored): the cheap read of the polling safety net. */
export async function latestConfigVersionNumber(db: Db): Promise<number> {
  const [row] = await rows<{ v: number | null }>(db, sql`select max(version)::int as v from config_versions`);
  return Number(row?.v ?? 0);
}

export async function getConfigVersion(db: Db, version: number): Promise<ConfigVersion | undefined> {
  const [row] = await db.select().from(configVersions).where(eq(configVersions.version, version));
  return row;
}

/** The version stored before `version`, if any: what its diff is taken against. */
export async function previousConfigVersion(db: Db, version: number): Promise<ConfigVersion | undefined> {
  const [row] = await db
    .select()
    .from(configVersions)
    .where(lt(configVersions.version, version))
    .orderBy(desc(configVersions.version))
    .limit(1);
  return row;
}

/** Newest first. */
export async function listConfigVersions(db: Db, limit = 50): Promise<ConfigVersion[]> {
  return db.select().from(configVersions).orderBy(desc(configVersions.version)).limit(limit);
}

export interface CodeOptionsRow {
  kind: "task" | "flow";
  name: string;
  options: Record<string, Json>;
}

export async function saveCodeOptions(db: Db, entries: CodeOptionsRow[]): Promise<void> {
  if (entries.length === 0) return;
  await db
    .insert(codeOptions)
    .values(entries)
    .onConflictDoUpdate({
      target: [codeOptions.kind, codeOptions.name],
      set: { options: sql`excluded.options`, updatedAt: sql`now()` },
    });
}

export async function listCodeOptions(db: Db): Promise<CodeOptionsRow[]> {
  return db.select({ kind: codeOptions.kind, name: codeOptions.name, options: codeOptions.options }).from(codeOptions);
}

export interface WorkerConfigState {
  id: string;
  hostname: string;
  pid: number;
  queues: string[];
  configVersion: number | null;
  /** Its slots (`maxConcurrency`); null for a worker older than 0.9. */
  concurrency: number | null;
  heartbeatAt: Date;
  /** Whether its lease is younger than the `liveMs` asked for. */
  live: boolean;
}

/** Every worker row with the config version it last reported, newest heartbeat first. */
export async function listWorkerConfigVersions(db: Db, liveMs: number): Promise<WorkerConfigState[]> {
  const found = await db
    .select({
      id: workers.id,
      hostname: workers.hostname,
      pid: workers.pid,
      queues: workers.queues,
      configVersion: workers.configVersion,
      concurrency: workers.concurrency,
      heartbeatAt: workers.heartbeatAt,
      live: sql<boolean>`${workers.heartbeatAt} > now() - make_interval(secs => ${liveMs / 1000})`,
    })
    .from(workers)
    .orderBy(desc(workers.heartbeatAt));
  return found;
}
