import { assertJson, type Json } from "@ax/store";

/**
 * Refuses, at the task's own `heartbeat()` call, progress that the node could not store: not plain
 * JSON (a BigInt, a class instance), or text PostgreSQL refuses (NUL, a lone surrogate). Checked
 * only later, on the way to the database, it was dropped with a log line the task never saw.
 */
export function assertProgress(progress: unknown, task: string): asserts progress is Json {
  assertJson(progress, `heartbeat progress of task "${task}"`);
}
