import { z } from "zod";
import { ATTEMPT_OUTCOMES, CATCH_UP_POLICIES, OVERLAP_POLICIES, RUN_STATUSES, RUN_TRIGGERS, TASK_STATUSES, TICK_STATUSES } from "@ax/store";

// What the routes answer, written out field by field so the OpenAPI document describes them and a
// client generated from it gets real types. Strict: http-responses.test.ts parses live answers with
// these, so a field added to (or dropped from) an answer without its schema fails there.

const instant = z.string().meta({ description: "ISO 8601, UTC" });
const json = z.unknown().meta({ description: "any JSON value" });
const thrown = { name: z.string(), message: z.string(), stack: z.string().nullable() };

export const attemptInfo = z.strictObject({
  n: z.number().int().meta({ description: "attempt number, from 1" }),
  worker: z.string(),
  startedAt: instant,
  finishedAt: instant.nullable(),
  outcome: z.enum(ATTEMPT_OUTCOMES).nullable().meta({ description: "null while it runs" }),
  error: z.strictObject(thrown).nullable(),
  workerSilentMs: z.number().int().nullable().meta({
    description: "on a running attempt whose worker missed two heartbeats: how long it has been silent; else null",
  }),
});

export const taskRunInfo = z.strictObject({
  key: z.string(),
  task: z.string(),
  queue: z.string().meta({ description: "the worker group that runs it" }),
  upstream: z.array(z.string()).meta({ description: "node keys it takes arguments from" }),
  status: z.enum(TASK_STATUSES),
  attempts: z.array(attemptInfo),
  result: json,
  error: z
    .strictObject({
      ...thrown,
      notRetried: z.string().nullable().meta({ description: "why its last attempt was not followed by another" }),
      notifyOnly: z.boolean().meta({ description: 'failed under onFailure "notify_only": the run ignores it' }),
    })
    .nullable(),
  progress: json,
  nextRetryAt: instant.nullable(),
  startedAt: instant.nullable(),
  finishedAt: instant.nullable(),
  reusedFrom: z.string().nullable().meta({ description: "a rerun's node carried over with its result: the run it came from" }),
  waitingFor: z.string().nullable().meta({ description: 'why it has not started although it could ("pool core_db (25/25)")' }),
});

const runFields = {
  id: z.string(),
  flow: z.string(),
  flowVersion: z.number().int(),
  status: z.enum(RUN_STATUSES),
  trigger: z.enum(RUN_TRIGGERS),
  businessKey: z.string().nullable(),
  idempotencyKey: z.string().nullable(),
  logicalDate: instant.nullable().meta({ description: "the schedule tick it ran for (schedule and backfill runs)" }),
  rerunOf: z.string().nullable(),
  priority: z.number().int().nullable().meta({ description: "1 = highest; null when none was given" }),
  runAt: instant.nullable().meta({ description: "when its first nodes became (or become) due, for a delayed trigger" }),
  createdAt: instant,
  startedAt: instant.nullable(),
  finishedAt: instant.nullable(),
};

export const runSummary = z.strictObject(runFields).meta({ description: "RunSummary: a run without its payload and nodes" });

export const runInfo = z
  .strictObject({
    ...runFields,
    payload: json,
    waitingFor: z.string().nullable().meta({ description: 'why a pending run has not started ("maxConcurrentRuns 2/2")' }),
    tasks: z.array(taskRunInfo),
  })
  .meta({ description: "RunInfo: a run with its payload, nodes and attempts" });

export const scheduleInfo = z.strictObject({
  flow: z.string(),
  cron: z.string(),
  timezone: z.string(),
  overlap: z.enum(OVERLAP_POLICIES),
  catchUp: z.enum(CATCH_UP_POLICIES),
  maxCatchUp: z.number().int(),
  paused: z.boolean(),
  resumedAt: instant.nullable(),
  updatedAt: instant,
  lastTick: z
    .strictObject({
      flow: z.string(),
      logicalDate: instant,
      status: z.enum(TICK_STATUSES),
      reason: z.string().nullable().meta({ description: "why a tick made no run" }),
      runId: z.string().nullable(),
      createdAt: instant,
      runStatus: z.enum(RUN_STATUSES).nullable(),
    })
    .nullable(),
  nextFireTimes: z.array(instant).meta({ description: "the next three fire times (while paused, when it would fire)" }),
  overdueSince: instant.nullable().meta({ description: "the first fire time no coordinator ticked, a minute or more ago; else null" }),
});

export const backfillInfo = z.strictObject({
  id: z.string(),
  flow: z.string(),
  from: instant,
  to: instant,
  maxConcurrentRuns: z.number().int(),
  status: z.enum(["active", "finished", "cancelled"]),
  createdAt: instant,
  ticks: z.number().int(),
  done: z.number().int().meta({ description: "ticks whose run ended, whatever its outcome (pruned ones included)" }),
  succeeded: z.number().int(),
  failed: z.number().int(),
  cancelled: z.number().int(),
  pruned: z.number().int().meta({ description: "ticks whose ended run retention removed since" }),
  running: z.number().int(),
  waiting: z.number().int().meta({ description: "ticks waiting for a slot or not started yet" }),
});

export const configHistoryEntry = z.strictObject({
  version: z.number().int(),
  author: z.string(),
  file: z.string(),
  createdAt: instant,
  added: z.number().int().meta({ description: "lines added since the version before" }),
  removed: z.number().int().meta({ description: "lines removed since the version before" }),
});

export const processConfigState = z.strictObject({
  id: z.string(),
  hostname: z.string(),
  pid: z.number().int(),
  roles: z.array(z.string()).meta({ description: "its Runtime roles: coordinator, worker, api" }),
  queues: z.array(z.string()).meta({ description: "the queues a worker serves; empty without the worker role" }),
  configVersion: z.number().int().nullable().meta({ description: "the config version it applies; null while none is stored" }),
  concurrency: z.number().int().nullable().meta({ description: "a worker's slots; null without the worker role" }),
  heartbeatAt: instant,
  live: z.boolean().meta({ description: "reported in the last 10 s" }),
});
