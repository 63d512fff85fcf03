import type { QueueInfo } from "ax-scheduler";

/** `ax queues` as a table: one line per task queue, the limit holding it last. */
export function renderQueues(queues: QueueInfo[]): string {
  if (queues.length === 0) return "no task queues have work or workers";
  const header = ["QUEUE", "WAITING", "ACTIVE", "DELAYED", "WORKERS", "LIMITED"];
  const rows = queues.map((q) => [
    q.name,
    String(q.waiting),
    String(q.active),
    String(q.delayed),
    q.workers === 0 ? "0 (none serves it)" : String(q.workers),
    q.limited ?? "-",
  ]);
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
