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

/** PostgreSQL's and Redis's CPU per task over a scenario, in ms; a server not on this machine is left out. */
export interface ServerCpu {
  postgres?: number | undefined;
  redis?: number | undefined;
}

/** CPU in ms of each process of this machine whose command name starts with `name`, by pid. */
function cpuByPid(name: string): Map<string, number> {
  const cpu = new Map<string, number>();
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (!readFileSync(`/proc/${pid}/comm`, "utf8").trim().startsWith(name)) continue;
    } catch {
      continue;
    }
    const ms = processCpuMs(pid);
    if (ms !== undefined) cpu.set(pid, ms);
  }
  return cpu;
}

/**
 * CPU spent since `before` by the processes named `name` that are still there (all of it for
 * those started since); undefined when none is visible. A process that exited meanwhile (a
 * PostgreSQL backend whose pool closed) takes its share with it, so this is a floor.
 */
function cpuSince(name: string, before: Map<string, number>): number | undefined {
  const now = cpuByPid(name);
  if (now.size === 0 && before.size === 0) return undefined;
  let spent = 0;
  for (const [pid, ms] of now) spent += ms - (before.get(pid) ?? 0);
  return spent;
}

/**
 * Starts measuring the CPU the servers spend while a scenario runs; the returned function answers
 * it per task. Every process of this machine counts, so it includes what the bench's own polling
 * and any other load cost the servers: on a quiet machine that is a few percent.
 */
export function meterServerCpu(): (tasks: number) => ServerCpu {
  const postgres = cpuByPid("postgres");
  const redis = cpuByPid("redis-server");
  const per = (spent: number | undefined, tasks: number) => (spent === undefined ? undefined : spent / tasks);
  return (tasks) => ({ postgres: per(cpuSince("postgres", postgres), tasks), redis: per(cpuSince("redis-server", redis), tasks) });
}

/** Every process's CPU per task: this one plus the servers', the figure that bounds throughput on a machine of few cores. */
export function totalCpu(nodeMs: number, servers: ServerCpu): number {
  return nodeMs + (servers.postgres ?? 0) + (servers.redis ?? 0);
}
