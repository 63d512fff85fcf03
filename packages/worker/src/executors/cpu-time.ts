import { readFileSync } from "node:fs";

// USER_HZ is part of Linux's userspace ABI: /proc times are in hundredths of a second everywhere.
const TICKS_PER_SECOND = 100;

/**
 * User + system CPU time, in ms, from a Linux `/proc/.../stat` file (a process, or one thread
 * under `task/`); null where there is no /proc or the thread or process is gone.
 */
export function procCpuMs(statPath: string): number | null {
  try {
    const stat = readFileSync(statPath, "utf8");
    // Fields after "pid (comm) ": comm may hold spaces, so count from its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? (ticks * 1000) / TICKS_PER_SECOND : null;
  } catch {
    return null;
  }
}
