import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { advertiseApi, DataDirLock, dataDirHolder, lockFileOf } from "./data-dir-lock.js";
import { AxDataDirLockedError } from "@ax/common";

describe("the embedded data directory lock", () => {
  let root: string;
  let dataDir: string;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), "ax-lock-unit-"));
    dataDir = join(root, "data");
  });

  afterEach(() => {
    advertiseApi(undefined);
    rmSync(root, { recursive: true, force: true });
  });

  const writeLock = (holder: object | string) =>
    writeFileSync(
      lockFileOf(dataDir),
      typeof holder === "string" ? holder : JSON.stringify({ hostname: hostname(), startedAt: "then", ...holder }),
    );

  it("refuses a second holder while a live process has it, naming that process", async () => {
    const other = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"]);
    try {
      writeLock({ pid: other.pid, api: "http://127.0.0.1:1" });
      expect(dataDirHolder(dataDir)).toMatchObject({ pid: other.pid, api: "http://127.0.0.1:1" });
      let refused: unknown;
      try {
        DataDirLock.acquire(dataDir);
      } catch (error) {
        refused = error;
      }
      expect(refused).toBeInstanceOf(AxDataDirLockedError);
      expect((refused as Error).message).toContain(`in use by process ${other.pid}`);
      expect((refused as Error).message).toContain(`delete ${lockFileOf(dataDir)}`);
    } finally {
      other.kill();
      await once(other, "exit");
    }
  });

  it("takes over a lock left by a dead process, by an earlier process with this pid, or unreadable", () => {
    for (const left of [{ pid: 999_999_999 }, { pid: process.pid }, "not json"]) {
      writeLock(left);
      expect(dataDirHolder(dataDir)).toBeUndefined();
      const lock = DataDirLock.acquire(dataDir);
      expect(dataDirHolder(dataDir)).toMatchObject({ pid: process.pid });
      lock.release();
      expect(() => readFileSync(lockFileOf(dataDir))).toThrow(/ENOENT/);
    }
  });

  it("advertises this process's API in the locks it holds", () => {
    const lock = DataDirLock.acquire(dataDir);
    expect(dataDirHolder(dataDir)?.api).toBeUndefined();
    advertiseApi("http://127.0.0.1:8080");
    expect(dataDirHolder(dataDir)).toMatchObject({ pid: process.pid, api: "http://127.0.0.1:8080" });
    lock.release();
  });
});
