import type { BusyKey, QueueInfo } from "ax-scheduler";

/** Columns padded to their widest cell, under a header line. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [header, ...rows]
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

/** `ax queues` as a table: one line per task queue, the limit holding it last. */
export function renderQueues(queues: QueueInfo[]): string {
  if (queues.length === 0) return "no task queues have work or workers";
  return table(
    ["QUEUE", "WAITING", "ACTIVE", "DELAYED", "WORKERS", "SLOTS", "LIMITED"],
    queues.map((q) => [
      q.name,
      String(q.waiting),
      String(q.active),
      String(q.delayed),
      q.workers === 0 ? "0 (none serves it)" : String(q.workers),
      q.workers === 0 ? "-" : `${q.slots.running}/${q.slots.capacity ?? "?"}`,
      q.limited ?? "-",
    ]),
  );
}

/** Why `ax queues --keys <task>` found nothing when no queue is of that task (most likely a typo); undefined when one is. */
export function unknownTaskNote(task: string, knownTasks: string[]): string | undefined {
  if (knownTasks.includes(task)) return undefined;
  const known = [...new Set(knownTasks)].sort().join(", ") || "none";
  return `note: no queue of a task named ${task} has work or a live worker now; if the name is misspelt, the tasks with queues now are: ${known}`;
}

/** `ax queues --keys <task>`: one line per business key with runs waiting on its concurrency limit. */
export function renderBusyKeys(task: string, keys: BusyKey[]): string {
  if (keys.length === 0) return `no key of task ${task} has runs waiting on its concurrency limit`;
  return table(
    ["KEY", "WAITING", "RUNNING"],
    keys.map((k) => [k.key, String(k.waiting), String(k.running)]),
  );
}
