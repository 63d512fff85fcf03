import { z } from "zod";
import { isCalendarDay, MAX_ALERT_MUTE_MS } from "@ax/common";
import { RUN_STATUSES, RUN_TRIGGERS, toStorableText } from "@ax/store";
import { durationMs } from "./duration.js";
import { connectionOptions, flowList, instant, pinoLogger, shown, strictOptions, wholeNumber } from "./option-checks.js";

/** `new Client(options)`: the connection options, the flows whose key functions apply, the payload cap. */
export const clientOptionsSchema = strictOptions({
  ...connectionOptions,
  flows: flowList.optional(),
  maxPayloadBytes: wholeNumber(1).optional(),
  logger: pinoLogger.optional(),
});

const oneOf = (values: readonly string[]) =>
  z.enum(values as [string, ...string[]], {
    error: (issue) => `must be one of ${values.join(", ")}, got ${shown(issue.input)}`,
  });
const text = z.string({ error: (issue) => `must be a string, got ${shown(issue.input)}` });
const keyFunction = z.custom<(payload: unknown, index: number) => string | undefined>((value) => typeof value === "function", {
  error: (issue) => `must be a function (payload, index) => string, got ${shown(issue.input)}`,
});
const flag = z.boolean({ error: (issue) => `must be true or false, got ${shown(issue.input)}` });
/** Checked where it is used (its own rules and messages); listed so that the key is known. */
const checkedElsewhere = z.unknown().optional();

/** Options every trigger takes besides its keys (checked by `resolveTiming`). */
const timingKeys = {
  tx: checkedElsewhere,
  delay: checkedElsewhere,
  runAt: checkedElsewhere,
  priority: checkedElsewhere,
  trigger: oneOf(["manual", "event"]).optional(),
};

/** A flow's name, as `pauseSchedule(flow)` and the like take it. */
export const flowNameSchema = z
  .string({ error: (issue) => `flow must be a flow's name, got ${shown(issue.input)}` })
  .min(1, { error: "flow must be a flow's name, got an empty string" });

/** `triggerFlow(flow, payload, options)`: a misspelt `idempotency_key` must not start a second run. */
export const triggerSchema = strictOptions({ ...timingKeys, idempotencyKey: text.optional(), businessKey: text.optional() });

/** `triggerFlows(flow, payloads, options)`: keys are functions of each payload. */
export const triggerManySchema = strictOptions({
  ...timingKeys,
  idempotencyKey: keyFunction.optional(),
  businessKey: keyFunction.optional(),
});

export const rerunSchema = strictOptions({
  only: oneOf(["failed", "all"]).optional(),
  from: text.optional(),
  payload: z.unknown().optional(),
}).refine((o) => o.only !== "all" || o.from === undefined, {
  // "all" and a node to start from each say which nodes run again: together one would be ignored without a word.
  // from with "failed" is from: it re-executes the nodes that did not succeed too.
  message: `only: "all" re-executes every node, so from (a node) has nothing to choose: give one of them (from also re-executes every node that did not succeed, as only: "failed" does)`,
});

/** Keys are unique per flow, and looked up by (flow, key). */
export const IDEMPOTENCY_KEY_NEEDS_FLOW = "needs flow too: an idempotency key is unique per flow";

export const runFilterSchema = strictOptions({
  flow: text.optional(),
  status: z
    .union([oneOf(RUN_STATUSES), z.array(oneOf(RUN_STATUSES)).min(1)], {
      error: (issue) => `must be one of ${RUN_STATUSES.join(", ")}, or a non-empty array of them, got ${shown(issue.input)}`,
    })
    .optional(),
  businessKey: text.optional(),
  idempotencyKey: text.optional(),
  trigger: oneOf(RUN_TRIGGERS).optional(),
  from: instant.optional(),
  to: instant.optional(),
  cursor: text.optional(),
  limit: wholeNumber(1).optional(),
}).superRefine((filter, ctx) => {
  if (filter.idempotencyKey !== undefined && filter.flow === undefined) {
    ctx.addIssue({ code: "custom", path: ["idempotencyKey"], message: IDEMPOTENCY_KEY_NEEDS_FLOW });
  }
  if (filter.from && filter.to && filter.from > filter.to) {
    ctx.addIssue({ code: "custom", path: ["from"], message: `is after to (${filter.to.toISOString()}): swap them` });
  }
});

/** `{ limit }` of `listBackfills`, `audit`. */
export const limitSchema = strictOptions({ limit: wholeNumber(1).optional() });

export const waitSchema = strictOptions({ timeout: durationMs.optional() });

export const logQuerySchema = strictOptions({
  node: text.optional(),
  attempt: wholeNumber(1).optional(),
  after: wholeNumber(0).optional(),
});

export const payloadsSchema = z.array(z.unknown(), {
  error: (issue) => `must be an array of payloads (one run each), got ${shown(issue.input)}`,
});

/** A date-time JavaScript reads in the local zone: no `Z`, no offset. */
const LOCAL_DATE_TIME = /^\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?$/;

/**
 * A backfill bound written without its offset would be read in the asking machine's zone, so the
 * same call would make different ticks from different machines. Anything else not a date is the
 * backfill's own AxBackfillRangeError.
 */
const moment = z.unknown().superRefine((value, ctx) => {
  if (typeof value === "string" && !isCalendarDay(value)) {
    ctx.addIssue({ code: "custom", message: `"${value}" names a day the calendar does not have; check the month and day` });
  } else if (typeof value === "string" && LOCAL_DATE_TIME.test(value)) {
    ctx.addIssue({
      code: "custom",
      message: `"${value}" has no UTC offset; write ${value.replace(" ", "T")}Z for UTC or ${value.replace(" ", "T")}+01:00 with the zone's offset (a date alone is midnight UTC)`,
    });
  }
});

export const backfillSchema = strictOptions({
  from: moment,
  to: moment,
  maxConcurrentRuns: wholeNumber(1).optional(),
  maxTicks: wholeNumber(1).optional(),
});

export const pruneSchema = strictOptions({
  olderThan: checkedElsewhere,
  archive: flag.optional(),
  dryRun: flag.optional(),
  batch: wholeNumber(1).optional(),
  onProgress: z
    .custom<(runs: number, total: number) => void>((value) => typeof value === "function", {
      error: (issue) => `must be a function (runs, total) => void, got ${shown(issue.input)}`,
    })
    .optional(),
  signal: z.instanceof(AbortSignal, { error: (issue) => `must be an AbortSignal, got ${shown(issue.input)}` }).optional(),
});

/** Text PostgreSQL can store: no NUL, no lone surrogate. */
const storable = text.refine((value) => toStorableText(value) === value, { error: "holds a NUL or a lone UTF-16 surrogate" });

/** `muteAlerts({ group, flow, task, for, reason })`. */
export const muteSchema = strictOptions({
  group: storable.min(1, { error: "must be the name of a group under alerts:, not empty" }),
  flow: storable.min(1, { error: "must be a flow's name, not empty (leave it out for every flow)" }).optional(),
  task: storable.min(1, { error: "must be a task's name, not empty (leave it out for every task)" }).optional(),
  for: durationMs
    .refine((ms) => ms >= 1000, { message: "must be at least 1s" })
    .refine((ms) => ms <= MAX_ALERT_MUTE_MS, {
      message: "must be at most 30d; to stop an alert for good, turn its trigger off under alerts: in runtime.yaml",
    }),
  reason: storable.max(500, { error: "must be at most 500 characters" }).optional(),
});

/** `listFlows({ retired })`. */
export const listFlowsSchema = strictOptions({ retired: flag.optional() });

/** `listAlertMutes({ ended })`. */
export const mutesQuerySchema = strictOptions({ ended: flag.optional() });

export const alertHistorySchema = strictOptions({ limit: wholeNumber(1, 500).optional(), before: wholeNumber(1).optional() });

export const auditSchema = strictOptions({
  limit: wholeNumber(1).optional(),
  before: wholeNumber(1).optional(),
  action: text.optional(),
  actor: text.optional(),
});

/** `unmuteAlerts(id)`: a mute's id as `muteAlerts` and `listAlertMutes` give it. */
export const muteIdSchema = wholeNumber(1);
