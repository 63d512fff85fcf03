import { mkdirSync } from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import type { Db, Store } from "./connect.js";
import { DataDirLock } from "./data-dir-lock.js";
import * as schema from "./schema/index.js";
import { guardStoreErrors } from "./store-error.js";

/**
 * One PGlite per data directory per process: two instances on one directory would corrupt it.
 * Across processes the lock file next to the directory refuses the second one with
 * AxDataDirLockedError instead of letting PGlite crash.
 */
const embedded = new Map<string, { client: PGlite; db: Db; lock: DataDirLock; users: number }>();

function openClient(dataDir: string, lock: DataDirLock): PGlite {
  try {
    return new PGlite(dataDir);
  } catch (error) {
    lock.release();
    throw error;
  }
}

export function openEmbedded(dataDir: string): Store {
  let entry = embedded.get(dataDir);
  if (!entry) {
    mkdirSync(dataDir, { recursive: true });
    const lock = DataDirLock.acquire(dataDir);
    const client = openClient(dataDir, lock);
    entry = { client, db: guardStoreErrors(drizzlePglite(client, { schema }) as unknown as Db, "public"), lock, users: 0 };
    embedded.set(dataDir, entry);
  }
  entry.users += 1;
  const shared = entry;
  let closed = false;
  return {
    db: shared.db,
    kind: "pglite",
    schema: "public",
    // One embedded process has no other clients to wait for; its commits are local anyway.
    relaxed: shared.db,
    leases: shared.db,
    // PGlite is a single connection already.
    withSession: (fn) => fn(shared.db),
    // PGlite delivers NOTIFY in-process, on commit, like a server.
    async listen(channel, onNotify) {
      const unlisten = await shared.client.listen(channel, onNotify);
      return { close: () => unlisten() };
    },
    async close() {
      if (closed) return;
      closed = true;
      shared.users -= 1;
      if (shared.users === 0) {
        embedded.delete(dataDir);
        try {
          await shared.client.close();
        } finally {
          shared.lock.release();
        }
      }
    },
  };
}
