import { readdirSync, readFileSync } from "node:fs";

/** `/proc/<pid>/stat` counts CPU in USER_HZ ticks, which Linux fixes at 100 per second for user space. */
const MS_PER_TICK = 10;

/** User + system CPU of one process in ms (Linux); undefined once it is gone. */
export function processCpuMs(pid: number | string): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // The command name may hold spaces; the fields after it are space-separated.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * MS_PER_TICK;
}

/**
 * CPU in ms of every process of this machine whose command name starts with `name` (`postgres`,
 * `redis-server`), or undefined when none is visible (the server runs elsewhere). A process that
 * exits between two readings takes its share with it, so a difference of two readings is a floor.
 */
export function serverCpuMs(name: string): number | undefined {
  let total: number | undefined;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    let comm: string;
    try {
      comm = readFileSync(`/proc/${pid}/comm`, "utf8").trim();
    } catch {
      continue;
    }
    if (!comm.startsWith(name)) continue;
    total = (total ?? 0) + (processCpuMs(pid) ?? 0);
  }
  return total;
}
