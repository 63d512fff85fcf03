import type { Logger } from "pino";
import { insteadOf, isCalendarDay, plainMessage } from "@ax/common";
import { z } from "zod";
import type { Flow } from "./definition/flow.js";

/** A value as a message may quote it: strings in quotes, so `"10"` and `10` read apart. */
export function shown(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 37)}...` : value);
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? "an invalid Date" : value.toISOString();
  if (Array.isArray(value)) return "an array";
  // Never its source: a task's wrapper or a key function would fill the message with code.
  if (typeof value === "function") {
    const task = (value as { taskName?: unknown }).taskName;
    return typeof task === "string" ? `task "${task}" (made by ax.task)` : "a function";
  }
  if (value === null || typeof value !== "object") return String(value);
  return value.constructor?.name && value.constructor !== Object ? `a ${value.constructor.name}` : "an object";
}

/** zod: an integer in [min, max]; the message says which and quotes what was given. */
export function wholeNumber(min: number, max = Number.MAX_SAFE_INTEGER) {
  const range = max === Number.MAX_SAFE_INTEGER ? `at least ${min}` : `from ${min} to ${max}`;
  const error = (issue: { input?: unknown }) => `must be a whole number ${range}, got ${shown(issue.input)}`;
  return z.int({ error }).min(min, { error }).max(max, { error });
}

/** zod: milliseconds of a timer or interval option, at least 1. */
export const milliseconds = wholeNumber(1);

/** zod: a valid Date; `new Date("x")` is named an invalid date, not "expected date, received Date". */
export const validDate = z.custom<Date>((value) => value instanceof Date && !Number.isNaN(value.getTime()), {
  error: (issue) => (issue.input instanceof Date ? "is an invalid date" : `must be a Date, got ${shown(issue.input)}`),
});

/** A date alone (midnight UTC) or a date-time with its UTC offset; JavaScript reads one without an offset in the local zone. */
const ISO_INSTANT = /^\d{4}-\d\d-\d\d(T\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d))?$/i;

/**
 * zod: a moment given as a valid Date or as ISO 8601 text (`2026-01-01`, `2026-01-01T02:00:00+01:00`),
 * made a Date. Text without its offset is refused: read in the asking machine's zone, the same
 * call would mean different moments on different machines.
 */
export const instant = z
  .custom<Date | string>((value) => value instanceof Date || typeof value === "string", {
    error: (issue) => `must be a Date or an ISO 8601 string, got ${shown(issue.input)}`,
  })
  .transform((value, ctx) => {
    const at = new Date(value);
    if (value instanceof Date && Number.isNaN(at.getTime())) ctx.addIssue({ code: "custom", message: "is an invalid date" });
    else if (typeof value === "string" && (!ISO_INSTANT.test(value) || !isCalendarDay(value) || Number.isNaN(at.getTime()))) {
      ctx.addIssue({
        code: "custom",
        message: `must be a Date or an ISO 8601 date or date-time with its UTC offset, such as 2026-01-01 (midnight UTC) or 2026-01-01T02:00:00+01:00, got ${shown(value)}`,
      });
    } else return at;
    return z.NEVER;
  });

/** zod: a non-empty string; URLs are not quoted back, as they may carry a password. */
const text = (what: string) => z.string({ error: `must be ${what}` }).min(1, { error: `must be ${what}, not empty`, abort: true });

const POSTGRES_URL = /^postgres(?:ql)?:\/\//;
const REDIS_URL = /^rediss?(?:\+sentinel)?:\/\//;

/** zod's message for a value that is not there: "missing (a pool name)"; for a wrong one, "must be a pool name, got 5". */
export const wanted =
  (what: string) =>
  (issue: { input?: unknown }): string =>
    issue.input === undefined ? `missing (${what})` : `must be ${what}, got ${shown(issue.input)}`;

/**
 * zod: an object of options refusing keys it does not know, so a misspelt option (`max_concurrency`)
 * fails instead of being ignored. `at` is the object's path (`"worker."`), as the message of an
 * unknown key names the key itself.
 */
export function strictOptions<S extends z.ZodRawShape>(shape: S, at = "", expected = "an object") {
  const known = Object.keys(shape);
  return z.strictObject(shape, {
    error: (issue) => {
      if (issue.code !== "unrecognized_keys") return `must be ${expected}, got ${shown(issue.input)}`;
      return issue.keys.map((key) => `${at}${key}: unknown option; ${insteadOf(key, known, "options here")}`).join("; ");
    },
  });
}

/** The options every `Runtime` and `Client` takes to reach PostgreSQL and Redis (a shape: both add theirs, then `strictOptions`). */
export const connectionOptions = {
  storage: text("a postgres:// URL")
    .regex(POSTGRES_URL, { error: "must be a postgres:// or postgresql:// URL (leave it unset for embedded PGlite)" })
    .optional(),
  dataDir: text("a directory path").optional(),
  redis: text("a Redis URL").regex(REDIS_URL, { error: "must be a redis://, rediss:// or redis+sentinel:// URL" }).optional(),
  prefix: text("a Redis key prefix").optional(),
};

/** zod: flows made by `ax.flow(…)`. */
export const flowList = z.array(
  z.custom<Flow<any>>((value) => typeof (value as Flow | null)?.name === "string" && (value as Flow).tasks instanceof Map, {
    error: (issue) => `must be a flow made by ax.flow(…), got ${shown(issue.input)}`,
  }),
  { error: (issue) => `must be an array of flows made by ax.flow(…), got ${shown(issue.input)}` },
);

/** Parses `value`, or throws `refuse` with every problem named by its option's path. */
export function checkOptions<S extends z.ZodType>(schema: S, value: unknown, refuse: (problems: string) => Error): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  // An unknown key's message names the key by its full path already.
  const named = (i: z.core.$ZodIssue) => i.path.length && i.code !== "unrecognized_keys";
  throw refuse(
    parsed.error.issues.map((i) => (named(i) ? `${i.path.join(".")} ${plainMessage(i.message)}` : plainMessage(i.message))).join("; "),
  );
}

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
        return i.keys.map((key) => `${key}: unknown option; ${insteadOf(key, known, "options")}`);
      }
      // strictOptions names the key and where it is itself; zod's own words say neither.
      if (i.code === "unrecognized_keys" && !/^Unrecognized keys?:/.test(i.message)) return [i.message];
      return [`${i.path.length ? i.path.join(".") : "(root)"}: ${plainMessage(i.message)}`];
    })
    .join("; ");
}

/** A pino logger given to a Runtime or a Client. */
export const pinoLogger = z.custom<Logger>(
  (value) => typeof (value as Logger | null)?.child === "function" && typeof (value as Logger).info === "function",
  { error: (issue) => `must be a pino logger, got ${shown(issue.input)}` },
);
