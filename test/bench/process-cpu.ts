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

/** PostgreSQL's and Redis's CPU per task over a scenario, in ms; a server not on this machine is left out. */
export interface ServerCpu {
  postgres?: number | undefined;
  redis?: number | undefined;
}

/**
 * Starts measuring the CPU the servers spend while a scenario runs; the returned function answers
 * it per task. Every process of this machine counts, so it includes what the bench's own polling
 * and any other load cost the servers: on a quiet machine that is a few percent.
 */
export function meterServerCpu(): (tasks: number) => ServerCpu {
  const postgres = serverCpuMs("postgres");
  const redis = serverCpuMs("redis-server");
  const per = (before: number | undefined, after: number | undefined, tasks: number) =>
    before === undefined || after === undefined ? undefined : (after - before) / tasks;
  return (tasks) => ({ postgres: per(postgres, serverCpuMs("postgres"), tasks), redis: per(redis, serverCpuMs("redis-server"), tasks) });
}

/** Every process's CPU per task: this one plus the servers', the figure that bounds throughput on a machine of few cores. */
export function totalCpu(nodeMs: number, servers: ServerCpu): number {
  return nodeMs + (servers.postgres ?? 0) + (servers.redis ?? 0);
}
