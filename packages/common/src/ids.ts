import { randomUUID } from "node:crypto";

/** A run's, backfill's or token's id as ax makes them, in either case. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (id: unknown): id is string => typeof id === "string" && UUID.test(id);

/** The time and counter of the last id made here: ids made in one process sort in the order they were made. */
let lastMs = -1;
let counter = 0;

/**
 * A new run's id: a UUID of version 7 (RFC 9562), whose first 48 bits are the time in ms, the next
 * 12 a counter within that millisecond, and the rest random. Run ids lead the primary keys of
 * `runs`, `node_runs` and `attempts`, so ids made in order put each trigger's rows on the newest
 * pages of those indexes, where random ids touch a random page of each, however large the history
 * (docs/performance.md, "Time-ordered run ids"). The counter (RFC 9562's "fixed-length dedicated
 * counter") keeps the ids one process makes in one millisecond in the order it made them, which
 * is the order a key's line keeps runs of one millisecond in (docs/limits.md): the runs of one
 * `triggerFlows` call, above all. A clock that steps back, or more than 4,096 ids in one
 * millisecond, borrows the next millisecond rather than break the order. Written here rather than
 * taken from the `uuid` package, whose entry loads every version it makes: 45 ms of CPU in each
 * process that starts, for a few lines. The random part is a version 4 UUID's, whose layout after
 * its variant is version 7's: Node draws those from a cache of random bytes, where
 * `randomBytes(16)` asked OpenSSL each time (2.6 µs an id against 0.6 in a loop here, 14 µs in a
 * profile of triggers made one at a time).
 */
export function newRunId(): string {
  const now = Date.now();
  if (now > lastMs) {
    lastMs = now;
    counter = 0;
  } else if (++counter > 0xfff) {
    lastMs++;
    counter = 0;
  }
  const ms = lastMs.toString(16).padStart(12, "0");
  return `${ms.slice(0, 8)}-${ms.slice(8, 12)}-7${counter.toString(16).padStart(3, "0")}${randomUUID().slice(18)}`;
}
