import { insertTaskLogs, isConnectionError, toStorableText, type AttemptRef, type Db, type Json, type TaskLogLine } from "@ax/store";
import type { Logger } from "pino";
import { capturingLogger, type CapturedLine } from "./log-capture.js";
import { storedFieldsCensor } from "./log-redaction.js";
import { TASK_LOG_MAX_BYTES, TASK_LOG_MAX_LINES } from "@ax/common";

/** Lines wait at most this long for a batch; an attempt's end flushes at once. */
const FLUSH_MS = 250;
/** Rows per insert statement. */
const MAX_BATCH = 1000;

/**
 * The `ax.context().log` lines of every attempt this process runs, written to PostgreSQL in
 * batches beside the attempts' own writes, never in front of them. Storing is best effort: lines
 * that cannot be written are counted in a warning on stdout (where every line went anyway) and
 * dropped. A batch holds many runs' lines, so a batch refused for its content is split until
 * only the refused lines are left out: one run's line never costs another run its lines.
 */
export class TaskLogWriter {
  private pending: TaskLogLine[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();

  /** Censors each line's fields as stdout does, and more (see storedFieldsCensor). */
  readonly censor: (fields: Json) => Json;

  constructor(
    private readonly db: Db,
    private readonly log: Logger,
    redact: readonly string[] = [],
  ) {
    this.censor = storedFieldsCensor(redact);
  }

  /** The store of one attempt's lines; costs nothing until its task logs. */
  attempt(ref: AttemptRef): AttemptLog {
    return new AttemptLog(this, ref);
  }

  push(line: TaskLogLine): void {
    this.pending.push(line);
    if (this.pending.length >= MAX_BATCH) this.flushSoon();
    else this.timer ??= setTimeout(() => this.flushSoon(), FLUSH_MS).unref();
  }

  flushSoon(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.length === 0) return;
    const lines = this.pending;
    this.pending = [];
    this.writing = this.writing.then(() => this.write(lines));
  }

  /** Writes what is buffered (graceful stop). */
  async close(): Promise<void> {
    this.flushSoon();
    await this.writing;
  }

  private async write(lines: TaskLogLine[]): Promise<void> {
    for (let i = 0; i < lines.length; i += MAX_BATCH) {
      const refused = await this.insertSplitting(lines.slice(i, i + MAX_BATCH));
      if (refused.lines.length > 0) {
        const runs = [...new Set(refused.lines.map((l) => l.runId))];
        this.log.warn(
          { err: refused.error, lines: refused.lines.length, runs },
          `could not store ${refused.lines.length} task log line(s); they are on stdout only`,
        );
      }
    }
  }

  /**
   * Inserts `lines`, halving a refused batch until the lines PostgreSQL refuses stand alone. An
   * unreachable database refuses every part alike, so such a batch is given up whole.
   */
  private async insertSplitting(lines: TaskLogLine[]): Promise<{ lines: TaskLogLine[]; error?: unknown }> {
    try {
      await insertTaskLogs(this.db, lines);
      return { lines: [] };
    } catch (error) {
      if (lines.length === 1 || isConnectionError(error)) return { lines, error };
      const half = Math.ceil(lines.length / 2);
      const first = await this.insertSplitting(lines.slice(0, half));
      const second = await this.insertSplitting(lines.slice(half));
      return { lines: [...first.lines, ...second.lines], error: first.error ?? second.error };
    }
  }
}

/**
 * One attempt's lines, bounded: past TASK_LOG_MAX_LINES lines or TASK_LOG_MAX_BYTES bytes the
 * rest are counted, not stored, and `close` adds one note saying how many were dropped.
 */
export class AttemptLog {
  private seq = 0;
  private bytes = 0;
  private dropped = 0;
  private closed = false;

  constructor(
    private readonly writer: TaskLogWriter,
    private readonly ref: AttemptRef,
  ) {}

  /** `log` for the task's context: prints as before and stores each line here. */
  wrap(log: Logger): Logger {
    return capturingLogger(log, (line) => this.add(line));
  }

  /** Lines logged after the attempt ended (work an inline task left running) are not stored. */
  add(line: CapturedLine): void {
    if (this.closed) return;
    if (this.dropped > 0 || this.seq >= TASK_LOG_MAX_LINES || this.bytes + line.bytes > TASK_LOG_MAX_BYTES) {
      this.dropped += 1;
      return;
    }
    this.seq += 1;
    this.bytes += line.bytes;
    this.writer.push(this.row(this.seq, line));
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.dropped > 0) {
      const msg = `${this.dropped} more line(s) dropped: task logs keep ${TASK_LOG_MAX_LINES} lines / ${TASK_LOG_MAX_BYTES / 1024} KiB per attempt (stdout has them all)`;
      this.writer.push({
        ...this.row(this.seq + 1, { at: Date.now(), level: "warn", msg, fields: null, bytes: 0 }),
        dropped: this.dropped,
      });
    }
    if (this.seq > 0 || this.dropped > 0) this.writer.flushSoon();
  }

  private row(seq: number, line: CapturedLine): TaskLogLine {
    return {
      runId: this.ref.runId,
      node: this.ref.nodeKey,
      attempt: this.ref.attempt,
      seq,
      at: new Date(line.at),
      level: line.level,
      msg: toStorableText(line.msg),
      fields: line.fields === null ? null : storableJson(this.writer.censor(line.fields)),
    };
  }
}

/**
 * `value` with each string and key made storable the way error messages are (NUL and lone
 * surrogates become U+FFFD): a log line is kept as nearly as it can be rather than refused.
 */
function storableJson(value: Json): Json {
  if (typeof value === "string") return toStorableText(value);
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map(storableJson);
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [toStorableText(key), storableJson(item)]));
}
