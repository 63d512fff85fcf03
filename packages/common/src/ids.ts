import { randomUUID } from "node:crypto";

/** A run's, backfill's or token's id as ax makes them, in either case. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (id: unknown): id is string => typeof id === "string" && UUID.test(id);

/**
 * A new run's id: a UUID of version 7 (RFC 9562), whose first 48 bits are the time in ms and the
 * rest random. Run ids lead the primary keys of `runs`, `node_runs` and `attempts`, so ids made in
 * order put each trigger's rows on the newest pages of those indexes, where random ids touch a
 * random page of each, however large the history (docs/performance.md, "Time-ordered run ids").
 * Ids of the same millisecond are in no particular order among themselves, which costs the
 * indexes nothing. Written here rather than taken from the `uuid` package, whose entry loads
 * every version it makes: 45 ms of CPU in each process that starts, for ten lines. The random
 * part is a version 4 UUID's, whose layout after its version digit is version 7's: Node draws
 * those from a cache of random bytes, where `randomBytes(16)` asked OpenSSL each time (2.6 µs an
 * id against 0.6 in a loop here, 14 µs in a profile of triggers made one at a time).
 */
export function newRunId(): string {
  const ms = Date.now().toString(16).padStart(12, "0");
  return `${ms.slice(0, 8)}-${ms.slice(8, 12)}-7${randomUUID().slice(15)}`;
}
