import {
  createRuns,
  createRunsInTransaction,
  runsHavePayloads,
  type CreatedRun,
  type Db,
  type FlowVersion,
  type NewRun,
  type ReadyNode,
} from "@ax/store";
import { admitCommitted, isCapped, prepareRun, triggered, type TriggerDeps, type TriggerRequest, type Triggered } from "./trigger.js";

/** Runs written by one statement; larger bursts are split, inside one transaction. */
const RUNS_PER_STATEMENT = 1000;

/** The caller's open transaction, and the schema of ax's tables (the caller's search_path may differ). */
export interface CallerTransaction {
  tx: Db;
  schema: string;
}

/**
 * Many runs at once (a burst of events): every request is checked before anything is written,
 * then all runs go in one statement and their first jobs in one Redis pipeline per queue.
 * Answers are in request order. With `into`, the runs are written in the caller's transaction
 * and nothing is enqueued here: they are announced on commit, and a coordinator's
 * `TriggerListener` enqueues them (the reconciler if none listens).
 */
export async function triggerRuns(deps: TriggerDeps, requests: TriggerRequest[], into?: CallerTransaction): Promise<Triggered[]> {
  const resolved = new Map<string, Promise<FlowVersion | undefined>>();
  const resolveFlow = deps.resolveFlow;
  const once: TriggerDeps = {
    ...deps,
    ...(resolveFlow ? { resolveFlow: (name: string) => memo(resolved, name, () => resolveFlow(name)) } : {}),
  };
  const runs: NewRun[] = [];
  // Of many payloads, a refused one is named by its place.
  for (const [i, request] of requests.entries())
    runs.push(await prepareRun(once, request, requests.length > 1 ? `payload ${i}` : "payload"));
  // Runs of a flow with maxConcurrentRuns are written held; admission releases them in order.
  const capped = new Set<string>();
  for (const name of new Set(runs.map((r) => r.flow.name))) if (await isCapped(deps, name)) capped.add(name);
  const toWrite = runs.map((r) => (capped.has(r.flow.name) ? { ...r, held: {} } : r));
  if (into) {
    const inTx = await createRunsInTransaction(into.tx, into.schema, toWrite);
    return inTx.map((c) => triggered(c, c.samePayload));
  }
  const created = await writeRuns(deps.writer.db, toWrite);
  const ready: ReadyNode[] = created.flatMap((c, i) => (c.created && !capped.has(runs[i]!.flow.name) ? c.ready : []));
  for (const name of capped) ready.push(...(await admitCommitted(deps.writer, name)));
  await deps.writer.jobs.dispatch(ready);
  const same = await runsHavePayloads(deps.writer.db, created, runs);
  return created.map((c, i) => triggered(c, same[i]));
}

async function writeRuns(db: Db, runs: NewRun[]): Promise<CreatedRun[]> {
  if (runs.length <= RUNS_PER_STATEMENT) return createRuns(db, runs);
  return db.transaction(async (tx) => {
    const created: CreatedRun[] = [];
    for (let i = 0; i < runs.length; i += RUNS_PER_STATEMENT)
      created.push(...(await createRuns(tx, runs.slice(i, i + RUNS_PER_STATEMENT))));
    return created;
  });
}

function memo<T>(cache: Map<string, Promise<T>>, key: string, load: () => Promise<T>): Promise<T> {
  let found = cache.get(key);
  if (!found) {
    found = load();
    cache.set(key, found);
  }
  return found;
}
