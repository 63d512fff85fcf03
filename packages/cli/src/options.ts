import type { Command } from "commander";
import { z } from "zod";
import {
  isCalendarDay,
  parseDuration,
  plainMessage,
  QUEUE_NAME,
  QUEUE_NAME_RULE,
  SCHEMA_NAME,
  SCHEMA_NAME_RULE,
  type Duration,
} from "@ax/common";
import { AxUsageError } from "./errors.js";

/** Connection flags every command shares; environment variables are the defaults. */
export const connectionFlags = z.object({
  storage: z
    .string()
    .refine((url) => /^postgres(ql)?:\/\//.test(url), "a postgres:// or postgresql:// URL (leave it out for the embedded history)")
    .refine(
      (url) => !/^postgres(ql)?:\/\//.test(url) || URL.canParse(url),
      "not a URL that can be read: the port must be a number, and @ : / in the user or password percent-encoded (%40 %3A %2F)",
    )
    .refine((url) => !URL.canParse(url) || new URL(url).searchParams.getAll("schema").length <= 1, "give ?schema= once")
    .refine((url) => !URL.canParse(url) || SCHEMA_NAME.test(new URL(url).searchParams.get("schema") ?? "public"), {
      error: (issue) => `schema "${new URL(issue.input as string).searchParams.get("schema")}": ${SCHEMA_NAME_RULE}`,
    })
    .optional(),
  redis: z
    .string()
    .refine(
      (url) => /^rediss?\+sentinel:\/\//.test(url) || (/^rediss?:\/\//.test(url) && URL.canParse(url)),
      "a redis://, rediss:// or redis+sentinel:// URL",
    )
    .optional(),
  prefix: z
    .string()
    .min(1)
    .regex(/^(\{[A-Za-z0-9_-]+\})?[A-Za-z0-9_-]*$/, "letters, digits, _ and -, optionally after a {hash tag} (for Redis Cluster)")
    .optional(),
  dataDir: z.string().optional(),
});

export type ConnectionFlags = z.infer<typeof connectionFlags>;

/**
 * Parses a command's flags (`command` undefined: the global flags) or throws AxUsageError naming
 * each wrong one; `names` names a value that came from elsewhere (`DATABASE_URL` for `storage`).
 */
export function parseFlags<S extends z.ZodType>(
  schema: S,
  raw: unknown,
  command: string | undefined,
  names: Record<string, string> = {},
): z.infer<S> {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const flag = (key: string) => names[key] ?? `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
    const problems = parsed.error.issues.map(
      // A problem of several flags together names them in its message.
      (i) => (i.path.length === 0 ? i.message : `${flag(String(i.path[0]))}: ${plainMessage(i.message)}`),
    );
    throw new AxUsageError(`${command === undefined ? "ax" : `ax ${command}`}: ${problems.join("; ")}`);
  }
  return parsed.data;
}

/** A whole-number flag; zod's own wording ("expected number, received NaN") reads like a bug to a person at a terminal. */
export const wholeNumber = z.coerce.number({ error: "expected a whole number" }).int({ error: "expected a whole number" });

export const positiveInt = wholeNumber.positive({ error: "expected a whole number greater than 0" });

/** `--queues a,b`: the names, each one checked (spaces around a comma are fine, an empty list is not). */
export const queueListFlag = z.string().transform((text, ctx) => {
  const queues = text
    .split(",")
    .map((q) => q.trim())
    .filter(Boolean);
  if (queues.length === 0) ctx.addIssue({ code: "custom", message: "name at least one queue (leave the flag out to serve every queue)" });
  for (const queue of queues) {
    if (!QUEUE_NAME.test(queue)) ctx.addIssue({ code: "custom", message: `${JSON.stringify(queue)}: ${QUEUE_NAME_RULE}` });
  }
  return queues;
});

/** A flag holding JSON text, parsed. */
export const jsonFlag = z.string().transform((text, ctx) => {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    ctx.addIssue({ code: "custom", message: `not JSON (${(error as Error).message})` });
    return z.NEVER;
  }
});

/** A duration flag: seconds as a number, or a string like "30s" or "2m". */
export const durationFlag = z.string().transform((text, ctx): Duration => {
  const value = /^\d+(\.\d+)?$/.test(text) ? Number(text) : text;
  try {
    parseDuration(value);
  } catch (error) {
    ctx.addIssue({ code: "custom", message: (error as Error).message });
    return z.NEVER;
  }
  return value;
});

/** A duration flag of at least `minMs` (`shown` as the message writes it), refused before anything is done. */
export const durationFlagAtLeast = (minMs: number, shown: string) =>
  durationFlag.refine((value) => parseDuration(value) >= minMs, { message: `must be at least ${shown}` });

/** `--timeout` is how long `--wait` waits: given without it, it would be ignored without a word. */
export function refuseTimeoutWithoutWait(command: Command, name: string): void {
  if (command.getOptionValueSource("timeout") === "cli" && !command.opts().wait) {
    throw new AxUsageError(`ax ${name}: --timeout is how long --wait waits: add --wait, or leave --timeout out`);
  }
}

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const WITH_OFFSET = /(Z|[+-]\d{2}(:?\d{2})?)$/i;
/**
 * A date alone (midnight UTC) or a date-time with its UTC offset, as an ISO string. A date-time
 * without an offset is refused, as the HTTP API refuses it, rather than read in this machine's zone.
 */
export const dateFlag = z
  .string({ error: "missing; give 2026-01-01 (midnight UTC) or 2026-01-01T02:00:00+01:00" })
  .transform((text, ctx) => {
    const at = new Date(text);
    if (Number.isNaN(at.getTime()) || !(DATE_ONLY.test(text) || text.includes("T"))) {
      ctx.addIssue({ code: "custom", message: `"${text}" is not a date; write 2026-01-01 (midnight UTC) or 2026-01-01T02:00:00+01:00` });
      return z.NEVER;
    }
    if (!/^\d{4}-\d{2}-\d{2}/.test(text) || !isCalendarDay(text)) {
      ctx.addIssue({ code: "custom", message: `"${text}" names a day the calendar does not have; check the month and day` });
      return z.NEVER;
    }
    if (!DATE_ONLY.test(text) && !WITH_OFFSET.test(text)) {
      ctx.addIssue({
        code: "custom",
        message: `"${text}" has no UTC offset; write ${text}Z for UTC or ${text}+01:00 with the zone's offset (a date alone is midnight UTC)`,
      });
      return z.NEVER;
    }
    return at.toISOString();
  });
