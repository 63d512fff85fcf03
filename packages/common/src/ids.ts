import { randomBytes } from "node:crypto";

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
 * every version it makes: 45 ms of CPU in each process that starts, for ten lines.
 */
export function newRunId(): string {
  const bytes = randomBytes(16);
  bytes.writeUIntBE(Date.now(), 0, 6);
  bytes[6] = (bytes[6]! & 0x0f) | 0x70;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
