import { z } from "zod";
import { KEY_STRATEGIES, QUEUE_NAME, QUEUE_NAME_RULE } from "@ax/common";
import type { ErrorMatcher, ResolvedTaskOptions } from "@ax/worker";
import { compileKey, type KeyOption } from "./business-key.js";
import { durationMs, timerMs, type Duration } from "./duration.js";
import { strictOptions, wanted } from "./option-checks.js";

export const DEFAULT_MAX_RESULT_BYTES = 256 * 1024;

/** Error itself or a class extending it: what `instanceof` can test a thrown error against. */
const isErrorClass = (value: unknown): boolean =>
  value === Error || (typeof value === "function" && typeof value.prototype === "object" && value.prototype instanceof Error);

const errorMatcher = z.union([z.string().min(1), z.custom<abstract new (...args: never[]) => Error>(isErrorClass, "an error class")], {
  error: (issue) =>
    typeof issue.input === "function"
      ? // A predicate, (e) => e.code === "ECONNRESET", reads naturally here but classifies nothing.
        'must be an error class (extending Error) or the name of one as a string ("TimeoutError"), not a function that tests the error: to decide by its fields, throw NonRetryableError for what must not be retried'
      : 'must be an error class (RangeError, a class of your own) or the name of one as a string ("TimeoutError")',
});

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

export const strategyOption = z.enum(KEY_STRATEGIES, { error: `must be one of: ${KEY_STRATEGIES.join(", ")}` });

/** A business key: a function of the task's arguments (code), or a dotted path into its first argument (code or YAML). */
export const KEY_PATH = /^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+)*$/;
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
    queue: z.string().regex(QUEUE_NAME, QUEUE_NAME_RULE),
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

/**
 * In YAML, an option whose default is "none" may be set to `null` (`timeout: null`,
 * `concurrency: ~`): the task then has none, whatever its code sets. Otherwise code limits could
 * only be raised from YAML, never lifted, without a deploy.
 */
const { shape } = taskOverridesSchema;
export const taskYamlOverridesSchema = taskOverridesSchema.extend({
  retryOn: shape.retryOn.nullable(),
  timeout: shape.timeout.nullable(),
  heartbeatTimeout: shape.heartbeatTimeout.nullable(),
  concurrency: shape.concurrency.nullable(),
  rateLimit: shape.rateLimit.nullable(),
  pool: shape.pool.nullable(),
  resources: shape.resources.nullable(),
  alertGroup: shape.alertGroup.nullable(),
});

export type TaskYamlOverrides = z.output<typeof taskYamlOverridesSchema>;

/** A task's `pool` option with its default of one slot made explicit. */
export interface TaskPool {
  name: string;
  slots: number;
}

export const taskPoolOf = (pool: NonNullable<TaskOverrides["pool"]>): TaskPool =>
  typeof pool === "string" ? { name: pool, slots: 1 } : pool;

/** Code defaults, then the task's own options, then YAML overrides (YAML wins; its `null` removes the option). */
export function resolveTaskOptions(name: string, code: TaskOverrides, yaml: TaskYamlOverrides = {}): ResolvedTaskOptions {
  const o = Object.fromEntries(Object.entries({ ...code, ...yaml }).filter(([, value]) => value !== null)) as TaskOverrides;
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
