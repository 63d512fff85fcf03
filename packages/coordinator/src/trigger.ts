import {
  admitHeldRuns,
  assertJson,
  createRuns,
  GroupCommit,
  jsonBytes,
  currentFlowVersion,
  unknownFlowError,
  runsHavePayloads,
  toStorableText,
  type CreatedRun,
  type Db,
  type FlowVersion,
  type Json,
  type NewRun,
  type ReadyNode,
  type RunTrigger,
} from "@ax/store";
import type { Logger } from "pino";
import { BatchedEnqueue } from "./enqueue.js";
import { flowAdmitsRuns } from "./flow-caps.js";
import type { QueueRegistry } from "./queues.js";
import { AxNotJsonError, AxPayloadError, AxPayloadTooLargeError, AxTriggerOptionError, newRunId } from "@ax/common";

export const DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024;

export interface TriggerRequest {
  flow: string;
  payload: unknown;
  trigger?: RunTrigger;
  idempotencyKey?: string | null | undefined;
  businessKey?: string | null | undefined;
  logicalDate?: Date | null | undefined;
  priority?: number | null | undefined;
  runAt?: Date | null | undefined;
}

/**
 * Where triggers write: runs are group-committed (many concurrent triggers, one statement and
 * one commit) and their ready jobs are added to Redis together, best effort (see `dispatch`).
 */
export class RunWriter {
  private readonly runs: GroupCommit<NewRun, CreatedRun>;
  readonly jobs: BatchedEnqueue;

  constructor(
    readonly db: Db,
    queues: QueueRegistry,
    readonly log: Logger,
  ) {
    this.runs = new GroupCommit((batch) => createRuns(db, batch));
    this.jobs = new BatchedEnqueue(queues, log);
  }

  create(run: NewRun): Promise<CreatedRun> {
    return this.runs.submit(run);
  }
}

export interface TriggerDeps {
  writer: RunWriter;
  maxPayloadBytes?: number | undefined;
  /** Looks up the flow's current version; callers may cache. */
  resolveFlow?: (name: string) => Promise<FlowVersion | undefined>;
  /** Whether the flow's runs go through admission (`maxConcurrentRuns`, `concurrency` per key); callers may cache (FlowCaps). @defaultValue read from flow_settings */
  capOf?: (flow: string) => Promise<boolean>;
}

export interface Triggered {
  runId: string;
  /** False when the idempotency key pointed at an existing run. */
  created: boolean;
  /** With `created: false`: whether that run has this trigger's payload (a different one is not used); absent when the run was pruned. */
  samePayload?: boolean;
}

/** What a trigger tells its caller of the run it made or found. */
export function triggered(run: Pick<CreatedRun, "runId" | "created">, samePayload: boolean | undefined): Triggered {
  return { runId: run.runId, created: run.created, ...(samePayload === undefined ? {} : { samePayload }) };
}

/**
 * Validates the request, writes run + node rows in one statement, then enqueues the ready
 * nodes. Bad input is refused before anything is written. Once the rows are committed the
 * trigger succeeds: a Redis that is down or refuses writes only delays the run.
 */
export async function triggerRun(deps: TriggerDeps, request: TriggerRequest): Promise<Triggered> {
  const run = await prepareRun(deps, request);
  const capped = await isCapped(deps, run.flow.name);
  // A capped flow's runs all go through admission, which alone decides who takes a free slot.
  const created = await deps.writer.create(capped ? { ...run, held: {} } : run);
  if (!created.created) {
    const [samePayload] = await runsHavePayloads(deps.writer.db, [created], [run]);
    return triggered(created, samePayload);
  }
  // Runs admission decides to cancel (a key's strategy) are cancelled by the coordinator's admission loop.
  await deps.writer.jobs.dispatch(capped ? await admitCommitted(deps.writer, run.flow.name) : created.ready);
  return { runId: created.runId, created: true };
}

/**
 * Admits a capped flow's held runs right after a trigger committed some. The runs exist by then:
 * a failure here must not fail the trigger, whose caller would retry and, without an idempotency
 * key, write them twice. The coordinators' admission loop admits them instead.
 */
export async function admitCommitted(writer: RunWriter, flow: string): Promise<ReadyNode[]> {
  try {
    return (await admitHeldRuns(writer.db, flow)).ready;
  } catch (error) {
    writer.log.warn({ err: error, flow }, "could not admit runs just triggered; the coordinators' admission loop will");
    return [];
  }
}

/** Whether the flow's runs must be written held, for admission to start (`maxConcurrentRuns`, `concurrency` per key). */
export async function isCapped(deps: TriggerDeps, flow: string): Promise<boolean> {
  return (deps.capOf ?? ((name) => flowAdmitsRuns(deps.writer.db, name)))(flow);
}

/** Checks the request (payload, keys, flow) and makes the run to write; throws before anything is written. */
export async function prepareRun(deps: TriggerDeps, request: TriggerRequest, what = "payload"): Promise<NewRun> {
  const payload = checkPayload(request.payload, deps.maxPayloadBytes, what);
  assertStorableKey(request.businessKey, "businessKey");
  assertStorableKey(request.idempotencyKey, "idempotencyKey");
  const { db } = deps.writer;
  // A name PostgreSQL cannot hold names no registered flow; asking would only make it refuse the query.
  const nameStorable = toStorableText(request.flow) === request.flow;
  const flow = nameStorable ? await (deps.resolveFlow ?? ((name) => currentFlowVersion(db, name)))(request.flow) : undefined;
  if (!flow) throw await unknownFlowError(db, request.flow);
  return {
    id: newRunId(),
    flow,
    trigger: request.trigger ?? "manual",
    payload,
    businessKey: request.businessKey,
    idempotencyKey: request.idempotencyKey,
    logicalDate: request.logicalDate,
    priority: request.priority,
    runAt: request.runAt,
  };
}

/** A run's input as stored (undefined is null), refused when not storable JSON or over the size cap; `what` names it in the error. */
export function checkPayload(value: unknown, maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES, what = "payload"): Json {
  const payload = value === undefined ? null : value;
  assertStorable(payload, what);
  const bytes = jsonBytes(payload);
  if (bytes > maxPayloadBytes) throw new AxPayloadTooLargeError(bytes, maxPayloadBytes, what);
  return payload;
}

function assertStorable(value: unknown, what: string): asserts value is Json {
  try {
    assertJson(value, what);
  } catch (error) {
    throw error instanceof AxNotJsonError ? new AxPayloadError(error) : error;
  }
}

/** Keys go to text columns, which refuse NUL and lone surrogates as jsonb does: a bad option, not a bad payload. */
function assertStorableKey(key: string | null | undefined, which: string): void {
  try {
    assertJson(key ?? null, which);
  } catch (error) {
    throw error instanceof AxNotJsonError ? new AxTriggerOptionError(`trigger options: ${error.message}`, { cause: error }) : error;
  }
}
