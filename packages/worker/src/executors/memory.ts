import { readFileSync } from "node:fs";
import { AxResourceLimitError } from "@ax/common";

/**
 * Resident memory of a process, in MB, from Linux's `/proc/<pid>/status` (VmRSS): its heap,
 * Buffers and native allocations alike. Null where there is no /proc or the process is gone.
 */
export function procRssMb(statusPath: string): number | null {
  try {
    const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(statusPath, "utf8"))?.[1];
    return kb === undefined ? null : Number(kb) / 1024;
  } catch {
    return null;
  }
}

/**
 * A process child's memory grew past `resources.memoryMb` (Buffers and native memory, not only
 * the heap that V8's cap covers): an AxResourceLimitError like a heap overflow, with the figures.
 * The use is rounded up: it is over the limit by any fraction, and "used 128 MB over its 128 MB
 * limit" would read as a contradiction.
 */
export class AxMemoryLimitError extends AxResourceLimitError {
  constructor(task: string, usedMb: number, limitMb: number) {
    super(task, "memory", `${limitMb} MB`);
    this.message =
      `task "${task}" ran out of memory: it used ${Math.ceil(usedMb)} MB (heap, Buffers and native memory together) over its ${limitMb} MB limit ` +
      "(resources.memoryMb), and its process was stopped. Raise resources.memoryMb, or make the task hold less at once (process the data in smaller pieces, stream it).";
  }
}
