import { z } from "zod";
import { DEFAULT_TIMEZONE, scheduleProblem } from "@ax/coordinator";
import { CATCH_UP_POLICIES, OVERLAP_POLICIES, type ScheduleDefinition } from "@ax/store";
import { KEY_STRATEGIES, plainMessage } from "@ax/common";
import type { ErrorMatcher, KeyedLimit, ResolvedTaskOptions } from "@ax/worker";
import { durationMs, timerMs, type Duration } from "./duration.js";
import { meantOption, strictOptions, wanted } from "./option-checks.js";

export const DEFAULT_MAX_RESULT_BYTES = 256 * 1024;

const errorMatcher = z.union(
  [z.string().min(1), z.custom<abstract new (...args: never[]) => Error>((v) => typeof v === "function", "an error class")],
  { error: 'must be an error class (RangeError, a class of your own) or the name of one as a string ("TimeoutError")' },
);

/** `retryOn: []` would retry nothing while `retries` says otherwise: almost surely a mistake. */
const retryOnList = z
  .array(errorMatcher)
  .min(1, { error: "is empty, so no error would be retried: leave retryOn out to retry every error, or set retries: 0 to retry none" });

/** The name a matcher matches by: a string, or a class's name. */
export const matcherName = (m: string | (abstract new (...args: never[]) => Error)) => (typeof m === "string" ? m : m.name);

/** Task names become node keys and job names: `#` is reserved for repeated uses. */
export const taskName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_.-]*$/, "use letters, digits, _ . and - (starting with a letter or _)");

/** How `byType` tells the members of a union apart. */
type ValueType = "number" | "string" | "object" | "function";

function typeOf(value: unknown): ValueType | undefined {
  if (typeof value === "number" || typeof value === "string" || typeof value === "function") return typeof value as ValueType;
  return value !== null && typeof value === "object" && !Array.isArray(value) ? "object" : undefined;
}

/**
 * One schema per type of value. A zod union whose members all fail says only "Invalid input";
 * picking the member by type reports what is wrong inside the one the user meant, at its path.
 */
function byType<M extends Partial<Record<ValueType, z.ZodType>>>(members: M, expected: string) {
  return z.unknown().transform((value, ctx): z.output<NonNullable<M[keyof M]>> => {
    const kind = typeOf(value);
    const member = kind && members[kind];
    if (!member) {
      ctx.addIssue({ code: "custom", message: expected });
      return z.NEVER;
    }
    const result = member.safeParse(value);
    if (result.success) return result.data as z.output<NonNullable<M[keyof M]>>;
    for (const issue of result.error.issues) ctx.addIssue(issue as Parameters<typeof ctx.addIssue>[0]);
    return z.NEVER;
  });
}

/** A count of slots, attempts or starts; zod's own words ("expected int", ">0") do not say what is wanted. */
export const atLeastOne = (what = "a whole number of at least 1") =>
  z
    .number({ error: wanted(what) })
    .int({ error: wanted(what) })
    .min(1, { error: wanted(what) });

const strategyOption = z.enum(KEY_STRATEGIES, { error: `must be one of: ${KEY_STRATEGIES.join(", ")}` });

/** A business key: a function of the task's arguments (code), or a dotted path into its first argument (code or YAML). */
const KEY_PATH = /^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+)*$/;
const keyOption = byType(
  {
    string: z.string().regex(KEY_PATH, "must be a dotted path into the task's input, e.g. user_id or order.customer.id"),
    function: z.custom<(...args: never[]) => unknown>((v) => typeof v === "function"),
  },
  "must be a dotted path into the task's input (e.g. user_id), or in code a function of the task's arguments",
);

/**
 * `concurrency: { max, key, strategy }`. A cancelling strategy acts on the runs that hold the same
 * business key, so without a key it would be silently ignored; `queue` is what a task-wide limit does.
 */
const keyedConcurrency = strictOptions(
  { max: atLeastOne(), key: keyOption.optional(), strategy: strategyOption.optional() },
  "concurrency.",
  "{ max, key?, strategy? }",
).superRefine((option, ctx) => {
  if (option.key !== undefined || option.strategy === undefined || option.strategy === "queue") return;
  ctx.addIssue({
    code: "custom",
    path: ["strategy"],
    message: `"${option.strategy}" needs a key: it acts on the runs holding the same business key. Add key (a dotted path such as order_id, or in code a function of the task's arguments), or remove strategy so that an attempt over the limit waits`,
  });
});

/** The gate counts rate windows in whole milliseconds: a shorter window could never admit a start. */
const rateWindow = durationMs.refine((ms) => ms >= 1, {
  message: 'must be at least 1ms: max starts are allowed in each window of per; write e.g. "1s" or "500ms"',
});

/** Options a task may set in code (camelCase) or YAML (snake_case, mapped to these). */
export const taskOverridesSchema = z
  .object({
    retries: z.number().int().min(0),
    retryBackoff: durationMs,
    backoff: z.enum(["exponential", "fixed"]),
    jitter: z.number().min(0).max(1),
    maxBackoff: durationMs,
    retryOn: retryOnList,
    noRetryOn: z.array(errorMatcher),
    timeout: timerMs,
    heartbeatTimeout: timerMs,
    onFailure: z.enum(["fail", "notify_only"]),
    concurrency: byType(
      { number: atLeastOne(), object: keyedConcurrency },
      `must be a whole number of at least 1, or { max, key, strategy } (strategy: ${KEY_STRATEGIES.join(", ")})`,
    ),
    rateLimit: strictOptions(
      { max: atLeastOne("a whole number of at least 1 (starts per window)"), per: rateWindow, key: keyOption.optional() },
      "rateLimit.",
      '{ max, per, key? }, e.g. { max: 5, per: "1s" }',
    ),
    pool: byType(
      {
        string: z.string().min(1, { error: "must be a pool name" }),
        object: strictOptions(
          { name: z.string({ error: wanted("a pool name") }).min(1, { error: "must be a pool name" }), slots: atLeastOne() },
          "pool.",
          "{ name, slots }",
        ),
      },
      "must be a pool name, or { name, slots }",
    ),
    queue: z.string().regex(/^[A-Za-z0-9_-]+$/, "use letters, digits, _ and -"),
    executor: z.enum(["inline", "thread", "process"]),
    resources: strictOptions({ memoryMb: z.number().positive().optional(), cpuSeconds: z.number().positive().optional() }, "resources."),
    maxResultBytes: z.number().int().positive(),
    alertGroup: z.string().min(1),
  })
  .partial()
  .strict();

export const taskOptionsSchema = taskOverridesSchema.extend({ name: taskName });

/** What `ax.task()` accepts; every option but `name` is optional (DESIGN §2). */
export interface TaskOptions {
  name: string;
  /** Extra attempts after the first failure. @defaultValue 0 */
  retries?: number;
  /** Base delay between attempts. @defaultValue 1 (second) */
  retryBackoff?: Duration;
  /** @defaultValue "exponential" */
  backoff?: "exponential" | "fixed";
  /** ± fraction applied to each delay. @defaultValue 0.2 */
  jitter?: number;
  /** Cap on one delay. @defaultValue "10m" */
  maxBackoff?: Duration;
  /** Only these errors (classes or `name` strings) are retried. @defaultValue all */
  retryOn?: ErrorMatcher[];
  /** These errors are never retried. @defaultValue none */
  noRetryOn?: ErrorMatcher[];
  /** Hard limit for one attempt. @defaultValue none */
  timeout?: Duration;
  /** Fail when no `heartbeat()` arrives within it. @defaultValue none */
  heartbeatTimeout?: Duration;
  /** @defaultValue "fail" */
  onFailure?: "fail" | "notify_only";
  /**
   * Max attempts of this task at once across the cluster; `{ max, key }` counts them per business
   * key (`key`: a function of the task's arguments, or a dotted path into its first argument),
   * `strategy` says what a node whose key is busy does: wait (`queue`), cancel the runs holding
   * the key (`cancel_in_progress`), or be cancelled (`cancel_newest`). @defaultValue unlimited
   */
  concurrency?: number | { max: number; key?: KeyOption; strategy?: "queue" | "cancel_in_progress" | "cancel_newest" };
  /** Starts of this task across the cluster, or per business key with `key`. @defaultValue none */
  rateLimit?: { max: number; per: Duration; key?: KeyOption };
  /** Resource pool (semaphore) whose slots it takes. @defaultValue none */
  pool?: string | { name: string; slots: number };
  /** Worker group that runs it. @defaultValue "default" */
  queue?: string;
  /** @defaultValue "inline" */
  executor?: "inline" | "thread" | "process";
  /** Hard caps for the thread/process executors. @defaultValue none */
  resources?: { memoryMb?: number; cpuSeconds?: number };
  /** Largest JSON result accepted. @defaultValue 262144 */
  maxResultBytes?: number;
  /** Alert sink group for terminal failures. @defaultValue none */
  alertGroup?: string;
}

export type TaskOverrides = z.output<typeof taskOverridesSchema>;

/** How a keyed limit names its key: a dotted path into the task's first argument, or a function of its arguments. */
export type KeyOption = string | ((...args: any[]) => unknown);

/**
 * PostgreSQL's text for a JSON number (`numeric`): JavaScript writes 1e21 and 1e-7 with an
 * exponent, PostgreSQL writes every digit.
 */
function numericText(n: number): string {
  const text = JSON.stringify(n);
  const exponent = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(text);
  if (!exponent) return text;
  const [, sign, first, rest = "", power] = exponent;
  const digits = first! + rest;
  const point = 1 + Number(power);
  if (point <= 0) return `${sign}0.${"0".repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${"0".repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

/** PostgreSQL's text for a jsonb value: ", " and ": " between items, object keys shortest first, then by their bytes. */
function jsonbText(value: unknown): string {
  if (typeof value === "number") return numericText(value);
  if (Array.isArray(value)) return `[${value.map(jsonbText).join(", ")}]`;
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value).map((key) => [key, Buffer.from(key)] as const);
    keys.sort(([, a], [, b]) => a.length - b.length || Buffer.compare(a, b));
    return `{${keys.map(([key]) => `${JSON.stringify(key)}: ${jsonbText((value as Record<string, unknown>)[key])}`).join(", ")}}`;
  }
  return JSON.stringify(value);
}

/**
 * A business key value as text, exactly as a flow's key reads it in SQL (`payload #>> path`,
 * "null" when missing), so one order gives one key at both levels: a string as it is; a
 * number, boolean, object or array as its jsonb text; no value (undefined, or nothing JSON can
 * hold) as "null". The value is taken as JSON would store it (a Date as its ISO string).
 */
function keyText(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "bigint") return value.toString();
  const json = JSON.stringify(value);
  if (json === undefined) return "null";
  const stored: unknown = JSON.parse(json);
  return typeof stored === "string" ? stored : jsonbText(stored);
}

/** One step of a dotted path, as `#>>` takes it: own keys only, an array by its index (negative: from the end). */
function step(value: unknown, part: string): unknown {
  if (Array.isArray(value)) {
    if (!/^-?\d+$/.test(part)) return undefined;
    const index = Number(part);
    return value[index < 0 ? value.length + index : index];
  }
  return value !== null && typeof value === "object" && Object.hasOwn(value, part) ? (value as Record<string, unknown>)[part] : undefined;
}

/** Reads the business key off a node's arguments. */
function compileKey(key: KeyOption): KeyedLimit {
  if (typeof key === "function") return { key: (args) => keyText(key(...args)), keySource: "function" };
  const path = key.split(".");
  return {
    key: (args) => keyText(path.reduce<unknown>(step, args[0])),
    keySource: key,
  };
}

/** A task's `pool` option with its default of one slot made explicit. */
export interface TaskPool {
  name: string;
  slots: number;
}

export const taskPoolOf = (pool: NonNullable<TaskOverrides["pool"]>): TaskPool =>
  typeof pool === "string" ? { name: pool, slots: 1 } : pool;

/** Code defaults, then the task's own options, then YAML overrides (YAML wins). */
export function resolveTaskOptions(name: string, code: TaskOverrides, yaml: TaskOverrides = {}): ResolvedTaskOptions {
  const o = { ...code, ...yaml };
  const pool = o.pool === undefined ? null : taskPoolOf(o.pool);
  return {
    name,
    retries: o.retries ?? 0,
    retryBackoffMs: o.retryBackoff ?? 1000,
    backoff: o.backoff ?? "exponential",
    jitter: o.jitter ?? 0.2,
    maxBackoffMs: o.maxBackoff ?? 10 * 60 * 1000,
    retryOn: o.retryOn ?? null,
    noRetryOn: o.noRetryOn ?? [],
    timeoutMs: o.timeout ?? null,
    heartbeatTimeoutMs: o.heartbeatTimeout ?? null,
    onFailure: o.onFailure ?? "fail",
    concurrency: typeof o.concurrency === "number" ? o.concurrency : o.concurrency && !o.concurrency.key ? o.concurrency.max : null,
    rateLimit: o.rateLimit && !o.rateLimit.key ? { max: o.rateLimit.max, perMs: o.rateLimit.per } : null,
    concurrencyKey:
      typeof o.concurrency === "object" && o.concurrency.key
        ? { ...compileKey(o.concurrency.key), max: o.concurrency.max, strategy: o.concurrency.strategy ?? "queue" }
        : null,
    rateLimitKey: o.rateLimit?.key ? { ...compileKey(o.rateLimit.key), max: o.rateLimit.max, perMs: o.rateLimit.per } : null,
    pool,
    queue: o.queue ?? "default",
    executor: o.executor ?? "inline",
    resources: o.resources ?? null,
    maxResultBytes: o.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES,
    alertGroup: o.alertGroup ?? null,
  };
}

/** Cron (5 or 6 fields) and IANA zone are checked here, at definition, not at the first tick. */
export const scheduleSchema = z
  .union([z.string().min(1), strictOptions({ cron: z.string().min(1), timezone: z.string().min(1).optional() }, "schedule.")])
  .superRefine((value, ctx) => {
    const problem = typeof value === "string" ? scheduleProblem(value) : scheduleProblem(value.cron, value.timezone);
    if (problem) ctx.addIssue({ code: "custom", message: problem.message, path: typeof value === "string" ? [] : [problem.field] });
  });

export const DEFAULT_MAX_CATCH_UP = 100;

/** What a flow option is when neither code nor YAML sets it (null: none). */
export const FLOW_DEFAULTS = {
  schedule: null,
  overlap: "skip",
  catchUp: "none",
  maxCatchUp: DEFAULT_MAX_CATCH_UP,
  maxConcurrentRuns: null,
  concurrency: null,
} as const;

export const flowOverridesSchema = z
  .object({
    schedule: scheduleSchema,
    overlap: z.enum(OVERLAP_POLICIES),
    catchUp: z.enum(CATCH_UP_POLICIES),
    maxCatchUp: z.number().int().positive(),
    maxConcurrentRuns: z.number().int().positive(),
    concurrency: strictOptions(
      {
        max: z.number().int().positive(),
        key: z.string().regex(KEY_PATH, "a dotted path into the run's payload, e.g. order_id or order.customer.id"),
        strategy: strategyOption.optional(),
      },
      "concurrency.",
      "{ max, key, strategy? }",
    ),
  })
  .partial()
  .strict();

export const flowOptionsSchema = flowOverridesSchema.extend({
  name: taskName,
  idempotencyKey: z.custom<(input: never) => string>((v) => typeof v === "function", "a function").optional(),
  businessKey: z.custom<(input: never) => string>((v) => typeof v === "function", "a function").optional(),
});

export interface FlowOptions<Input> {
  name: string;
  /**
   * Cron string (5 fields, or 6 with seconds first) or `{ cron, timezone }` (IANA zone,
   * default UTC); each tick is a run with `trigger: "schedule"` and a `logicalDate`.
   */
  schedule?: string | { cron: string; timezone?: string };
  /** When a tick finds an earlier run of the flow unfinished. @defaultValue "skip" */
  overlap?: "skip" | "queue" | "allow" | "cancel_previous";
  /** Ticks missed while no coordinator ran: run none, the newest, or all of them. @defaultValue "none" */
  catchUp?: "none" | "latest" | "all";
  /** Most missed ticks `catchUp: "all"` runs (the newest ones). @defaultValue 100 */
  maxCatchUp?: number;
  maxConcurrentRuns?: number;
  /**
   * At most `max` runs at once per business key: `key` is a dotted path into the run's payload
   * (coordinators read it in SQL, so any producer can trigger). `strategy` when the key is busy:
   * hold the run (`queue`), cancel the runs holding the key (`cancel_in_progress`), or cancel the
   * new run (`cancel_newest`). @defaultValue none
   */
  concurrency?: { max: number; key: string; strategy?: "queue" | "cancel_in_progress" | "cancel_newest" };
  /** A trigger whose key exists returns the existing run. */
  idempotencyKey?: (input: Input) => string;
  /** Shown and searchable everywhere (order id, batch id). */
  businessKey?: (input: Input) => string;
}

export type FlowOverrides = z.output<typeof flowOverridesSchema>;

/** The flow's schedule as stored: code options, then YAML overrides (YAML wins); undefined without a schedule. */
export function resolveSchedule(flow: string, code: FlowOverrides, yaml: FlowOverrides = {}): ScheduleDefinition | undefined {
  const o = { ...code, ...yaml };
  if (o.schedule === undefined) return undefined;
  const { cron, timezone } = typeof o.schedule === "string" ? { cron: o.schedule, timezone: undefined } : o.schedule;
  return {
    flow,
    cron,
    timezone: timezone ?? DEFAULT_TIMEZONE,
    overlap: o.overlap ?? FLOW_DEFAULTS.overlap,
    catchUp: o.catchUp ?? FLOW_DEFAULTS.catchUp,
    maxCatchUp: o.maxCatchUp ?? FLOW_DEFAULTS.maxCatchUp,
  };
}

/** zod's issues as one readable line each. */
/**
 * Every problem, by the path of the option it is in. With `known` (the options the top level
 * takes), a key it does not take names the option probably meant (`retry_backoff` -> `retryBackoff`).
 */
export function formatIssues(error: z.ZodError, known?: readonly string[]): string {
  // An unknown key first: it is usually the misspelling of the option reported missing after it.
  const unknownFirst = [...error.issues].sort((a, b) => Number(b.code === "unrecognized_keys") - Number(a.code === "unrecognized_keys"));
  return unknownFirst
    .flatMap((i) => {
      if (i.code === "unrecognized_keys" && i.path.length === 0 && known) {
        return i.keys.map((key) => {
          const meant = meantOption(key, known);
          return meant ? `${key}: unknown option; did you mean ${meant}?` : `${key}: unknown option; the options are ${known.join(", ")}`;
        });
      }
      // strictOptions names the key and where it is itself; zod's own words say neither.
      if (i.code === "unrecognized_keys" && !/^Unrecognized keys?:/.test(i.message)) return [i.message];
      return [`${i.path.length ? i.path.join(".") : "(root)"}: ${plainMessage(i.message)}`];
    })
    .join("; ");
}
