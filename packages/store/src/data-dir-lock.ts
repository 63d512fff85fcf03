import { randomBytes } from "node:crypto";
import { linkSync, readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { AxDataDirLockedError, type DataDirHolder } from "@ax/common";

/** The lock sits next to the data directory: PGlite refuses to create a database in a directory that is not empty. */
export function lockFileOf(dataDir: string): string {
  return `${dataDir}.lock`;
}

/** The process that holds `dataDir`, if a live one does (a lock left by a dead process does not count). */
export function dataDirHolder(dataDir: string): DataDirHolder | undefined {
  const found = readLock(lockFileOf(dataDir));
  return found && alive(found.holder) ? found.holder : undefined;
}

/** What this process advertises in every lock it holds. */
let advertisedApi: string | undefined;
const held = new Set<DataDirLock>();

/**
 * Records `url` as this process's HTTP API in the locks it holds and will take, so that other
 * processes (the CLI) use it instead of opening the data directory themselves.
 */
export function advertiseApi(url: string | undefined): void {
  advertisedApi = url;
  for (const lock of held) lock.rewrite();
}

/** An exclusive hold on an embedded data directory, for this process. */
export class DataDirLock {
  private constructor(
    readonly file: string,
    readonly startedAt: string,
  ) {}

  /** Takes the lock, or throws AxDataDirLockedError naming the live process that has it. */
  static acquire(dataDir: string): DataDirLock {
    const file = lockFileOf(dataDir);
    for (;;) {
      const startedAt = new Date().toISOString();
      if (createExclusive(file, JSON.stringify(record(startedAt)))) {
        const lock = new DataDirLock(file, startedAt);
        held.add(lock);
        return lock;
      }
      const found = readLock(file);
      if (found && alive(found.holder)) throw new AxDataDirLockedError(dataDir, found.holder, file);
      // Left by a process that is gone: take it over, unless someone else just did.
      if (found) removeIfUnchanged(file, found.text);
    }
  }

  rewrite(): void {
    const tmp = `${this.file}.${randomBytes(6).toString("hex")}`;
    writeFileSync(tmp, JSON.stringify(record(this.startedAt)));
    renameSync(tmp, this.file);
  }

  release(): void {
    if (!held.delete(this)) return;
    const found = readLock(this.file);
    if (found?.holder.pid === process.pid && found.holder.startedAt === this.startedAt) removeIfUnchanged(this.file, found.text);
  }
}

// A process that exits without closing its store (an uncaught error, process.exit) frees its
// directories at once rather than leaving the next process to find a dead pid.
process.on("exit", () => {
  for (const lock of [...held]) lock.release();
});

function record(startedAt: string): DataDirHolder {
  return { pid: process.pid, hostname: hostname(), startedAt, api: advertisedApi };
}

/** Written whole under a temporary name, then linked: a reader never sees a half-written lock. */
function createExclusive(file: string, text: string): boolean {
  const tmp = `${file}.${randomBytes(6).toString("hex")}`;
  writeFileSync(tmp, text);
  try {
    linkSync(tmp, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  } finally {
    unlinkSync(tmp);
  }
}

function readLock(file: string): { holder: DataDirHolder; text: string } | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  try {
    const holder = JSON.parse(text) as DataDirHolder;
    if (Number.isInteger(holder.pid) && typeof holder.hostname === "string") return { holder, text };
  } catch {
    // Not ours to read: treated as left by a dead process below.
  }
  return { holder: { pid: 0, hostname: hostname(), startedAt: "unknown" }, text };
}

function alive(holder: DataDirHolder): boolean {
  // Another host's pid cannot be checked from here: the lock holds until someone deletes it.
  if (holder.hostname !== hostname()) return true;
  if (holder.pid <= 0) return false;
  // Our own pid in a lock this process does not hold: left by an earlier process that had it (containers reuse pid 1).
  if (holder.pid === process.pid) return [...held].some((lock) => lock.startedAt === holder.startedAt);
  try {
    process.kill(holder.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function removeIfUnchanged(file: string, text: string): void {
  try {
    if (readFileSync(file, "utf8") === text) unlinkSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
}
