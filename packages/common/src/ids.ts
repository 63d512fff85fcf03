import { v7 } from "uuid";

/** A run's, backfill's or token's id as ax makes them, in either case. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (id: unknown): id is string => typeof id === "string" && UUID.test(id);

/**
 * A new run's id: a UUID whose first 48 bits are the time (version 7). Run ids lead the primary
 * keys of `runs`, `node_runs` and `attempts`, so ids made in order put each trigger's rows on the
 * newest pages of those indexes, where random ids touch a random page of each, however large the
 * history (docs/performance.md, "Time-ordered run ids").
 */
export const newRunId = (): string => v7();
