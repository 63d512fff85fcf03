import { insteadOf, MAX_ALERT_MUTE_MS, MAX_KEY_LENGTH, MAX_PRIORITY, parseDuration, TOKEN_NAME, TOKEN_NAME_RULE } from "@ax/common";
import { z } from "zod";
import { RUN_STATUSES, RUN_TRIGGERS, TOKEN_SCOPES, toStorableText } from "@ax/store";
import { runStatusList } from "@ax/common";

/** Text PostgreSQL can compare against: a NUL or lone surrogate in a filter is the caller's mistake, not a 500. */
export const storableText = z.string().refine((text) => toStorableText(text) === text, "contains a NUL or a lone UTF-16 surrogate");

/** PostgreSQL's `integer`: a larger number in a path, query or body is the caller's mistake, not a 500. */
export const PG_INT_MAX = 2_147_483_647;

/**
 * A whole number in a path or query, in [min, max]; every refusal says so in those words, not
 * zod's "expected number, received NaN". `max` defaults to PostgreSQL's integer, and is named
 * too: "at least 1" alone would leave 3000000000 unexplained.
 */
export function wholeNumberParam(min: number, max = PG_INT_MAX) {
  return wholeNumberIn(z.coerce.number({ error: rangeWords(min, max) }), min, max);
}

const rangeWords = (min: number, max: number) => `must be a whole number from ${min} to ${max}`;

/** One refusal per value: 1e23 fails both the integer and the range check, in the same words. */
function wholeNumberIn<N extends z.ZodNumber | z.ZodCoercedNumber>(base: N, min: number, max: number) {
  const error = rangeWords(min, max);
  return base.int({ error, abort: true }).min(min, { error, abort: true }).max(max, { error });
}

/** An instant with its UTC offset, refused in words that show the form (zod says only "Invalid ISO datetime"). */
const isoInstant = () =>
  z.iso.datetime({
    offset: true,
    error: "must be an ISO 8601 date-time with its UTC offset, such as 2026-01-01T02:00:00Z or 2026-01-01T03:00:00+01:00",
    abort: true,
  });

/** A whole number in a JSON body, in [min, max]. */
const wholeNumberField = (min: number, max = PG_INT_MAX) => wholeNumberIn(z.number({ error: rangeWords(min, max) }), min, max);

/** A Redis stream id part is an unsigned 64-bit number; a longer one is no event id. */
const U64_MAX = 18_446_744_073_709_551_615n;
const EVENT_ID = /^\d+(-\d+)?$/;

/**
 * A route's query, with a key it does not take (a typo such as `busnessKey`, `flow[]`) refused by
 * name: ignored, it would drop the filter the caller meant and answer every run.
 */
export function parseQuery<S extends z.ZodObject>(schema: S, query: unknown): z.output<S> {
  const parsed = schema.strict().safeParse(query);
  if (parsed.success) return parsed.data as z.output<S>;
  const takes = Object.keys(schema.shape).join(", ");
  throw new z.ZodError(
    parsed.error.issues.map((issue) =>
      issue.code === "unrecognized_keys"
        ? {
            ...issue,
            path: ["query"],
            message: `unknown parameter ${issue.keys.map((k) => `"${k}"`).join(", ")}; this route takes ${takes}`,
          }
        : issue,
    ),
  );
}

/** `GET /api/events`: replay from after this event id (`<ms>-<seq>`; `0` = everything the stream holds). */
export const eventsQuery = z.object({
  after: z
    .string()
    .regex(EVENT_ID, "an event id such as 1700000000000-0")
    // Checked after the pattern whether it matched (zod runs both): only digits reach BigInt.
    .refine(
      (id) => !EVENT_ID.test(id) || id.split("-").every((part) => BigInt(part) <= U64_MAX),
      "is past the largest event id (each part fits in 64 bits)",
    )
    .optional(),
  access_token: z.string().optional().meta({ description: "the bearer token, for EventSource, which cannot send headers" }),
});

export const flowOverviewQuery = z.object({
  runs: wholeNumberParam(0, 100).optional().meta({ description: "recent runs per flow, newest first (default 30)" }),
});

/** One run state or several, comma-separated: a pattern, so that the OpenAPI document names the states. */
const STATUS_LIST = new RegExp(`^(${RUN_STATUSES.join("|")})(,(${RUN_STATUSES.join("|")}))*$`);

export const listQuery = z
  .object({
    flow: storableText.optional(),
    status: z
      .string()
      .regex(STATUS_LIST, `must be one of ${RUN_STATUSES.map((s) => `"${s}"`).join(", ")}, or several comma-separated`)
      .transform((text) => runStatusList(text) ?? [])
      .optional()
      .meta({ description: "one state, or several comma-separated (pending,running: the runs still in flight)" }),
    businessKey: storableText.optional(),
    idempotencyKey: storableText
      .optional()
      .meta({ description: "the run this idempotency key made; needs flow (keys are unique per flow)" }),
    trigger: z.enum(RUN_TRIGGERS).optional(),
    from: isoInstant().optional().meta({ description: "runs created at or after this time (ISO 8601)" }),
    to: isoInstant().optional().meta({ description: "runs created before this time (ISO 8601)" }),
    cursor: z.string().min(1).optional().meta({ description: "nextCursor of the previous page" }),
    limit: wholeNumberParam(1, 500).optional(),
  })
  .refine((q) => q.idempotencyKey === undefined || q.flow !== undefined, {
    path: ["idempotencyKey"],
    message: "needs flow too: an idempotency key is unique per flow",
  })
  .refine((q) => q.from === undefined || q.to === undefined || Date.parse(q.from) <= Date.parse(q.to), {
    path: ["from"],
    message: "is after to: swap them",
  });

/**
 * A JSON body that refuses keys it does not know, naming the key meant when one is a typo or a
 * respelling away (`idempotency_key`): ignored, it would drop what the caller asked for.
 */
function strictBody<S extends z.ZodRawShape>(shape: S) {
  const known = Object.keys(shape);
  return z.strictObject(shape, {
    error: (issue) => {
      if (issue.code !== "unrecognized_keys") return undefined;
      return issue.keys.map((key) => `unknown key "${key}"; ${insteadOf(key, known, "keys")}`).join("; ");
    },
  });
}

/** An idempotency or business key: what the body gives, the Client's options, a flow's key function returns. */
export const triggerKey = z
  .string()
  .min(1)
  .max(MAX_KEY_LENGTH, `at most ${MAX_KEY_LENGTH} characters; derive a shorter key (a hash of the long one)`);

export const triggerBody = strictBody({
  payload: z.unknown().optional().meta({ description: "the run's input (JSON)" }),
  idempotencyKey: triggerKey.optional().meta({ description: "wins over the flow's own idempotencyKey function; at most 512 characters" }),
  businessKey: triggerKey.optional().meta({ description: "wins over the flow's own businessKey function; at most 512 characters" }),
  runAt: isoInstant().optional().meta({ description: "start the run's first nodes at this time (ISO 8601)" }),
  priority: z
    .number()
    .int()
    .min(1)
    .max(MAX_PRIORITY)
    .optional()
    .meta({ description: "BullMQ priority of every job of the run, 1 served first" }),
  trigger: z
    .enum(["event", "manual"])
    .default("event")
    .meta({ description: 'the run\'s trigger label: "manual" when a person asked for it (the console, ax trigger), else "event"' }),
});

export const rerunBody = strictBody({
  only: z.enum(["failed", "all"]).optional(),
  from: z.string().min(1).optional(),
  payload: z.unknown().optional(),
}).refine((o) => o.only !== "all" || o.from === undefined, {
  message: `only: "all" re-executes every node, so from (a node) has nothing to choose: give one of them (from also re-executes every node that did not succeed, as only: "failed" does)`,
  path: ["only"],
});

export const backfillBody = strictBody({
  from: isoInstant(),
  to: isoInstant(),
  maxConcurrentRuns: wholeNumberField(1).optional(),
  maxTicks: wholeNumberField(1).optional(),
});

export const configBody = strictBody({
  yaml: storableText.meta({ description: "the whole runtime.yaml text" }),
  author: storableText
    .min(1)
    .max(200, "at most 200 characters: a name or an email address")
    .meta({ description: "who made the change (history)" }),
  file: storableText
    .min(1)
    .max(1000, "at most 1000 characters: the file's path, as errors and the history show it")
    .optional()
    .meta({ description: 'the file name errors and history show; default "api"' }),
  base: wholeNumberField(1).optional().meta({
    description:
      "the version in force whose text, as the API shows it, `yaml` is an edit of: the changes are made on that version's own text, keeping its comments and the masked values left as shown; 409 when another version was stored since",
  }),
});

export const configCheckBody = strictBody({
  yaml: configBody.shape.yaml,
  file: configBody.shape.file,
  base: configBody.shape.base,
});

export const configRollbackBody = strictBody({
  version: wholeNumberField(1).meta({ description: "the stored version whose text becomes a new version" }),
  author: configBody.shape.author,
});

export const configHistoryQuery = z.object({
  limit: wholeNumberParam(1, 500).optional().meta({ description: "at most this many, newest first (default 50)" }),
});

export const configDiffQuery = z.object({
  from: wholeNumberParam(1).meta({ description: "the version the diff starts from" }),
  to: wholeNumberParam(1).meta({ description: "the version it goes to" }),
});

export const configEffectiveQuery = z.object({
  task: storableText.optional().meta({ description: "only this task" }),
  flow: storableText.optional().meta({ description: "only this flow" }),
});

export const configVersionParams = z.object({
  version: wholeNumberParam(1).meta({ description: "config version" }),
});

export const triggerAnswer = z.object({
  runId: z.uuid(),
  created: z.boolean(),
  samePayload: z.boolean().optional().meta({
    description: "with created: false, whether that run has this payload (a different one is not used); absent when it was pruned",
  }),
});

export const runIdParams = z.object({ id: storableText.meta({ description: "run id (uuid)" }) });
export const flowParams = z.object({ flow: storableText.meta({ description: "flow name" }) });
export const backfillIdParams = z.object({ id: storableText.meta({ description: "backfill id (uuid)" }) });
export const flowNameParams = z.object({ name: storableText.meta({ description: "flow name" }) });

/** `GET /api/backfills`: how many, newest first. */
export const backfillsQuery = z.object({
  limit: z.coerce
    .number({ error: "must be a whole number from 1 to 500" })
    .int({ error: "must be a whole number from 1 to 500" })
    .min(1, { error: "must be a whole number from 1 to 500" })
    .max(500, { error: "must be at most 500 (the newest 500 backfills)" })
    .optional()
    .meta({ description: "how many backfills, newest first (default 50)" }),
});

export const auditQuery = z.object({
  limit: wholeNumberParam(1, 1000).optional().meta({ description: "at most this many (default 100)" }),
  before: wholeNumberParam(1).optional().meta({ description: "entries older than this id (the last id of the previous page)" }),
  action: storableText
    .optional()
    .meta({ description: "one action (run.cancel), or a family of them without the dot (run: trigger, cancel, rerun)" }),
  actor: storableText.optional().meta({ description: "one actor: a token's name, cli:<user>, anonymous" }),
});

export const alertsQuery = z.object({
  limit: wholeNumberParam(1, 500).optional().meta({ description: "at most this many (default 50)" }),
  before: wholeNumberParam(1).optional().meta({ description: "entries older than this id (the last id of the previous page)" }),
});

export const loggedAlert = z.object({
  id: z.number().int(),
  sentAt: z.string(),
  group: z.string(),
  kind: z.string().meta({ description: "task_failed, consecutive_failures, slow_run, stuck_running, recovered" }),
  flow: z.string(),
  runId: z.string().nullable(),
  alert: z.record(z.string(), z.unknown()).meta({ description: "the alert as its sinks received it (docs/events-and-alerts.md)" }),
  deliveries: z
    .array(z.object({ sink: z.string(), target: z.string(), ok: z.boolean(), error: z.string().optional() }))
    .meta({ description: "what each sink of the group answered" }),
});

export const muteBody = strictBody({
  group: storableText.min(1).meta({ description: "a group under alerts: in the config in force" }),
  flow: storableText.min(1).optional().meta({ description: "only this flow's alerts (none: every flow of the group)" }),
  task: storableText.min(1).optional().meta({ description: "only this task's alerts (none: every task, and the run-level alerts)" }),
  for: z
    .union([z.string(), z.number()], { error: "must be a duration: seconds as a number, or text such as 30m, 2h, 1d" })
    .transform((value, ctx) => {
      try {
        return parseDuration(value);
      } catch (error) {
        ctx.addIssue({ code: "custom", message: (error as Error).message });
        return z.NEVER;
      }
    })
    .refine((ms) => ms >= 1000, "must be at least 1s")
    .refine(
      (ms) => ms <= MAX_ALERT_MUTE_MS,
      "must be at most 30d; to stop an alert for good, turn its trigger off under alerts: in runtime.yaml",
    )
    .meta({ description: "how long, from now: seconds as a number, or 30m, 2h, 1d" }),
  reason: storableText.max(500).optional().meta({ description: "why, for whoever reads `ax alerts mutes`" }),
});

export const muteIdParams = z.object({ id: wholeNumberParam(1) });

export const alertTestBody = strictBody({
  group: storableText.min(1).meta({ description: "a group under alerts: in the config in force" }),
});

export const mutesQuery = z.object({
  ended: z
    .enum(["true", "false"], { error: "must be true or false" })
    .transform((v) => v === "true")
    .optional()
    .meta({ description: "true: mutes that ended in the last 30 days too" }),
});

export const alertMute = z.object({
  id: z.number().int(),
  group: z.string(),
  flow: z.string().nullable(),
  task: z.string().nullable(),
  until: z.string(),
  createdAt: z.string(),
  createdBy: z.string().meta({ description: "the token's name, or cli:<os user>" }),
  reason: z.string().nullable(),
});

export const tokenBody = strictBody({
  name: z.string().regex(TOKEN_NAME, TOKEN_NAME_RULE).meta({ description: "unique name (the audit log's actor)" }),
  scope: z.enum(TOKEN_SCOPES),
  expiresAt: isoInstant()
    .refine(
      (at) => Date.parse(at) > Date.now(),
      "is in the past, so the token would never work; give a future time, or none to never expire",
    )
    .optional()
    .meta({ description: "when the token stops working (ISO 8601, in the future); none: never" }),
});

export const tokenNameParams = z.object({ name: storableText.meta({ description: "token name" }) });

export const tokenInfo = z.object({
  name: z.string(),
  scope: z.enum(TOKEN_SCOPES),
  createdAt: z.string(),
  expiresAt: z.string().nullable(),
  lastUsedAt: z.string().nullable(),
});

export const session = z.object({
  auth: z.boolean().describe("false when the server runs with insecureNoAuth: every caller may do everything"),
  name: z.string().nullable().describe("the token's name; null without auth"),
  scope: z.enum(TOKEN_SCOPES).describe("what the token may do; admin without auth"),
  expiresAt: z.string().nullable(),
});

export const auditEntry = z.object({
  id: z.number().int(),
  at: z.string(),
  actor: z.string().meta({ description: "token name; cli:<user> for token commands run on the storage; anonymous without auth" }),
  action: z.string().meta({
    description:
      "run.trigger, run.cancel, run.rerun, backfill.create, backfill.cancel, backfill.retry, config.apply, config.rollback, schedule.pause, schedule.resume, flow.retire, token.create, token.revoke, alerts.mute, alerts.unmute, alerts.test",
  }),
  target: z.string().nullable(),
  ip: z.string().nullable(),
  detail: z.unknown().nullable(),
});

export const apiError = z.object({ error: z.string(), message: z.string() });

export const jsonValue = z.unknown().meta({ description: "any JSON value" });

export const flowDescription = z.object({
  name: z.string(),
  version: z.number().int().meta({ description: "the latest stored DAG version" }),
  nodes: z.array(z.object({ key: z.string(), task: z.string(), queue: z.string(), upstream: z.array(z.string()) })),
  edges: z.array(z.object({ from: z.string(), to: z.string() })),
  options: z
    .record(z.string(), jsonValue)
    .nullable()
    .meta({ description: "the flow's options as this server loaded them at start (code, then YAML), when it loaded the flow's code" }),
  schedule: z.object({ cron: z.string(), timezone: z.string() }).nullable().meta({
    description:
      "the schedule coordinators tick the flow by (code, then the current config version), as GET /api/schedules lists it; null when it has none",
  }),
  retiredAt: z.string().nullable().meta({
    description:
      "when the flow was retired (POST /api/flows/:flow/retire): its runs stay readable, it takes no new ones; null while in use",
  }),
  definedBy: z.number().int().meta({ description: "live processes whose code defines the flow (0: none)" }),
});

export const pausedAnswer = z.object({ flow: z.string(), paused: z.boolean() });

export const flowStatesQuery = z.object({
  retired: z
    .enum(["true", "false"], { error: "must be true or false" })
    .transform((v) => v === "true")
    .optional()
    .meta({ description: "true: the retired flows too" }),
});

export const flowState = z.object({
  name: z.string(),
  version: z.number().int().meta({ description: "the current version, the one new runs get" }),
  nodes: z.number().int(),
  definedBy: z.number().int().meta({
    description: "live processes whose code defines the flow (0: none, so it may be retired once its runs are done)",
  }),
  lastRunAt: z.string().nullable().meta({ description: "when its newest run was created; null when it has none" }),
  unfinishedRuns: z.number().int().meta({ description: "runs pending (held and delayed included) or running" }),
  retiredAt: z.string().nullable(),
});

export const retiredAnswer = z.object({
  flow: z.string(),
  retiredAt: z.string(),
  changed: z.boolean().meta({ description: "false when the flow had been retired already" }),
  tasks: z.array(z.string()).meta({ description: "tasks no other flow in use runs: runtime.yaml may no longer name them" }),
});

export const configVersion = z
  .object({
    version: z.number().int(),
    author: z.string(),
    file: z.string(),
    createdAt: z.string(),
    yaml: z.string(),
    parsed: jsonValue,
    diff: z.string().meta({ description: "unified diff from the version before it" }),
  })
  .meta({ description: "a stored config version" });

export const effectiveOption = z.object({
  option: z.string(),
  value: jsonValue,
  source: z.string().meta({ description: "yaml vN, code or default" }),
});

export const pruneBody = strictBody({
  olderThan: storableText.min(1).meta({
    description:
      'a duration of at least 1h, e.g. "90d": runs that were created and finished longer ago than that go, with the rest of the history as old',
  }),
  archive: z.boolean().optional().meta({ description: "copy runs, nodes, attempts and task logs into the *_archive tables first" }),
  dryRun: z.boolean().optional().meta({ description: "only count what would be pruned" }),
  batch: wholeNumberField(1, 100_000).optional().meta({ description: "runs per transaction (default 1000)" }),
});

const prunedCount = z.number().int().min(0);

export const pruneAnswer = z.object({
  runs: prunedCount.meta({ description: "finished runs, each with its nodes, attempts and idempotency keys" }),
  logLines: prunedCount.meta({ description: "task log lines of those runs" }),
  onceKeys: prunedCount,
  scheduleTicks: prunedCount.meta({ description: "each flow's newest tick is kept" }),
  alerts: prunedCount.meta({ description: "entries of the sent alerts' history" }),
  archived: z
    .boolean()
    .optional()
    .meta({ description: "whether the runs were copied into the *_archive tables first; absent on a dry run" }),
  dryRun: z.literal(true).optional().meta({ description: "present on a dry run: the counts are what a prune now would remove" }),
});
