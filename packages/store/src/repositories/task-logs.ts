import { sql } from "drizzle-orm";
import { AxNodeNotFoundError } from "@ax/common";
import type { Db } from "../connect.js";
import type { TaskLogLevel } from "../schema/index.js";
import type { Json } from "../types.js";
import { recordset, rows } from "./raw.js";

export type { TaskLogLevel } from "../schema/index.js";

/** One stored `ax.context().log` line. */
export interface TaskLogLine {
  runId: string;
  node: string;
  attempt: number;
  seq: number;
  at: Date;
  level: TaskLogLevel;
  msg: string;
  fields: Json | null;
  /** On an attempt's note line: how many lines past the bound were dropped. */
  dropped?: number | undefined;
}

/**
 * Stores lines in one statement. A batch written twice (a flush retried after a lost reply) keeps
 * the first copy.
 */
export async function insertTaskLogs(db: Db, lines: TaskLogLine[]): Promise<void> {
  if (lines.length === 0) return;
  const values = lines.map((l) => ({
    run_id: l.runId,
    node_key: l.node,
    attempt: l.attempt,
    seq: l.seq,
    at: l.at.toISOString(),
    level: l.level,
    msg: l.msg,
    fields: l.fields,
    dropped: l.dropped ?? null,
  }));
  await db.execute(sql`
    insert into attempt_logs (run_id, node_key, attempt, seq, at, level, msg, fields, dropped)
    select run_id, node_key, attempt, seq, at, level, msg, fields, dropped
    from ${recordset(values, "run_id uuid, node_key text, attempt int, seq int, at timestamptz, level text, msg text, fields jsonb, dropped int")} l
    on conflict do nothing`);
}

export interface TaskLogQuery {
  node?: string | undefined;
  attempt?: number | undefined;
  /** Only lines with a greater `seq` (within their attempt): what a follower has not seen yet. */
  after?: number | undefined;
}

/** A stored line as readers get it (`GET /api/runs/:id/logs`, `client.getLogs`). */
export interface LogLineInfo {
  node: string;
  attempt: number;
  /** 1, 2, … within its attempt. */
  seq: number;
  /** ISO 8601. */
  at: string;
  level: TaskLogLevel;
  msg: string;
  fields: Json | null;
}

export interface TaskLogs {
  lines: LogLineInfo[];
  /** Attempts whose lines went past the bound: the stored ones end with a note saying how many were dropped. */
  truncated: { node: string; attempt: number }[];
}

/**
 * A run's task log lines in the order they were logged; undefined when no run has that id.
 * Throws AxNodeNotFoundError when `node` names no node of the run.
 */
export async function readTaskLogs(db: Db, runId: string, query: TaskLogQuery = {}): Promise<TaskLogs | undefined> {
  const [run] = await rows<{ found: number }>(db, sql`select 1 as found from runs where id = ${runId}::uuid`);
  if (!run) return undefined;
  const filter = sql.join(
    [
      sql`run_id = ${runId}::uuid`,
      ...(query.node !== undefined ? [sql`node_key = ${query.node}`] : []),
      ...(query.attempt !== undefined ? [sql`attempt = ${query.attempt}`] : []),
    ],
    sql` and `,
  );
  const after = query.after !== undefined ? sql`and seq > ${query.after}` : sql``;
  const found = await rows<{
    node_key: string;
    attempt: number;
    seq: number;
    at: Date | string;
    level: TaskLogLevel;
    msg: string;
    fields: Json | null;
    dropped: number | null;
  }>(
    db,
    sql`select node_key, attempt, seq, at, level, msg, fields, dropped from attempt_logs where ${filter} ${after} order by at, node_key, attempt, seq`,
  );
  // Only an empty answer needs the node checked: lines prove the node exists.
  if (query.node !== undefined && found.length === 0) {
    const nodes = await rows<{ node_key: string }>(db, sql`select node_key from node_runs where run_id = ${runId}::uuid order by node_key`);
    if (!nodes.some((n) => n.node_key === query.node)) {
      throw new AxNodeNotFoundError(
        runId,
        query.node,
        nodes.map((n) => n.node_key),
      );
    }
  }
  const truncated = await rows<{ node_key: string; attempt: number }>(
    db,
    sql`select node_key, attempt from attempt_logs where ${filter} and dropped is not null order by node_key, attempt`,
  );
  return {
    lines: found.map((r) => ({
      node: r.node_key,
      attempt: r.attempt,
      seq: r.seq,
      at: new Date(r.at).toISOString(),
      level: r.level,
      msg: r.msg,
      fields: r.fields,
    })),
    truncated: truncated.map((r) => ({ node: r.node_key, attempt: r.attempt })),
  };
}
