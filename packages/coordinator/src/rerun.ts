import { isDeepStrictEqual } from "node:util";
import {
  admitsRuns,
  createRuns,
  descendantsOf,
  flowRetiredAt,
  flowSettings,
  flowVersionById,
  lockBackfillTicks,
  relinkBackfillRuns,
  rerunSource,
  type Db,
  type Json,
  type RerunSource,
} from "@ax/store";
import { admitFlow } from "./admission.js";
import { dispatchCommitted, enqueueNodes } from "./enqueue.js";
import type { QueueRegistry } from "./queues.js";
import {
  AxNothingToRerunError,
  AxRunNotFinishedError,
  AxTaskUnavailableError,
  AxUnknownFlowError,
  AxUnknownNodeError,
  newRunId,
} from "@ax/common";
import { checkPayload } from "./trigger.js";

export interface RerunOptions {
  /** `failed` (default): failed, skipped and cancelled nodes and their descendants; `all`: every node. */
  only?: "failed" | "all" | undefined;
  /** Re-execute this node and its descendants, reusing the rest. */
  from?: string | undefined;
  /** The new run's input; when it differs from the old run's, every node taking the input runs again. @defaultValue the original run's payload */
  payload?: unknown;
}

export interface RerunDeps {
  db: Db;
  queues: QueueRegistry;
  maxPayloadBytes?: number | undefined;
  /**
   * Task names this deployment defines; a rerun needing another is refused. Undefined skips the
   * check (a node whose task no worker defines then fails with AxUnknownTaskError after its grace).
   */
  knownTasks?: ReadonlySet<string> | undefined;
  /**
   * The business key the flow's own key function gives a new payload; undefined when this caller
   * does not have the flow's code, and then the old run's key is kept.
   */
  businessKeyOf?: ((flow: string, payload: Json) => string | undefined) | undefined;
}

const RERUN_STATUSES = new Set(["failed", "skipped", "cancelled"]);

/**
 * Starts a new run (`trigger: "rerun"`, `rerunOf`) of the same flow version as `runId`: the
 * nodes chosen by `options` and everything downstream of them run again; every other node is
 * carried over with its stored result. A node that did not succeed is never carried over, so
 * `from` also re-executes those. Checks everything before writing; the run and its nodes are
 * written in one statement. Returns undefined for an unknown run.
 */
export async function rerunRun(
  deps: RerunDeps,
  runId: string,
  options: RerunOptions = {},
  /**
   * A backfill's retry: the new run is held under the backfill's cap and takes the old one's place
   * among the ticks of every backfill listing it. Undefined, with nothing written, when no backfill
   * lists the old run any more (a concurrent retry replaced it first).
   */
  backfillId?: string,
): Promise<string | undefined> {
  const source = await rerunSource(deps.db, runId);
  if (!source) return undefined;
  if (source.status === "pending" || source.status === "running") throw new AxRunNotFinishedError(runId, source.status);
  // Said first, before a task of the retired flow is found missing; createRuns refuses it too, under the lock.
  const retiredAt = await flowRetiredAt(deps.db, source.flow);
  if (retiredAt) throw new AxUnknownFlowError(source.flow, [], retiredAt);
  const version = await flowVersionById(deps.db, source.flowVersionId);
  if (!version) throw new Error(`run ${runId} names flow version id ${source.flowVersionId}, which is not stored`);
  const keys = version.dag.nodes.map((n) => n.key);
  if (options.from !== undefined && !keys.includes(options.from)) throw new AxUnknownNodeError(runId, options.from, keys);
  const payload = options.payload === undefined ? source.payload : checkPayload(options.payload, deps.maxPayloadBytes);
  // A result computed from the old input cannot be carried into a run with a new one.
  const newInput = !isDeepStrictEqual(asStored(payload), source.payload);
  const inputReaders = newInput ? version.dag.nodes.filter((n) => n.args.some((a) => a.kind === "input")).map((n) => n.key) : [];
  const rerun = nodesToRerun(source, keys, options, inputReaders, (seeds) => descendantsOf(version.dag, seeds));
  if (rerun.size === 0) throw new AxNothingToRerunError(runId);
  if (deps.knownTasks) {
    const missing = version.dag.nodes.find((n) => rerun.has(n.key) && !deps.knownTasks!.has(n.task));
    if (missing) throw new AxTaskUnavailableError(runId, missing.task, version.version);
  }
  const businessKey = (newInput ? deps.businessKeyOf?.(source.flow, payload) : undefined) ?? source.businessKey;
  const results = new Map<string, Json>(source.nodes.filter((n) => !rerun.has(n.key)).map((n) => [n.key, n.result]));
  const held = backfillId !== undefined || admitsRuns(await flowSettings(deps.db, source.flow));
  const created = await deps.db.transaction(async (tx) => {
    if (backfillId !== undefined && !(await lockBackfillTicks(tx, runId))) return undefined;
    const [written] = await createRuns(tx, [
      {
        id: newRunId(),
        flow: version,
        trigger: "rerun",
        payload,
        businessKey,
        logicalDate: source.logicalDate,
        rerunOf: runId,
        held: held ? { backfillId } : undefined,
        reuse: { from: runId, results },
      },
    ]);
    if (!written?.created) throw new Error(`rerun of ${runId} was not written`);
    if (backfillId !== undefined) await relinkBackfillRuns(tx, runId, written.runId);
    return written;
  });
  if (!created) return undefined;
  if (!held) await dispatchCommitted(enqueueNodes(deps.queues, created.ready));
  // A backfill's retries are released together, once all are written (retryBackfill).
  else if (backfillId === undefined) await dispatchCommitted(admitFlow(deps, source.flow));
  return created.runId;
}

/** `inputReaders`: nodes that take the run's input, when the rerun's payload differs from the old run's. */
function nodesToRerun(
  source: RerunSource,
  keys: string[],
  options: RerunOptions,
  inputReaders: string[],
  descendants: (seeds: string[]) => string[],
): Set<string> {
  if (options.only === "all" && options.from === undefined) return new Set(keys);
  const unfinished = source.nodes.filter((n) => n.status !== "success").map((n) => n.key);
  const failed = source.nodes.filter((n) => RERUN_STATUSES.has(n.status)).map((n) => n.key);
  const seeds = [...(options.from === undefined ? failed : [options.from, ...unfinished]), ...inputReaders];
  return new Set([...seeds, ...descendants(seeds)]);
}

/** A payload as PostgreSQL will store it (JSON.stringify's rules: `toJSON`, no `undefined` fields, `-0` as 0). */
function asStored(payload: Json): Json {
  return JSON.parse(JSON.stringify(payload)) as Json;
}
