import { z } from "zod";
import { DEFAULT_TIMEZONE, scheduleProblem } from "@ax/coordinator";
import { CATCH_UP_POLICIES, OVERLAP_POLICIES, type ScheduleDefinition } from "@ax/store";
import { strictOptions } from "./option-checks.js";
import { KEY_PATH, strategyOption, taskName } from "./options.js";

/** Cron (5 or 6 fields) and IANA zone are checked here, at definition, not at the first tick. */
export const scheduleSchema = z
  .union([z.string().min(1), strictOptions({ cron: z.string().min(1), timezone: z.string().min(1).optional() }, "schedule.")], {
    error: 'must be a cron string ("0 2 * * *"), or { cron, timezone }',
  })
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

/** In YAML, `null` removes a flow option whose default is none (a code schedule, cap or key limit). */
export const flowYamlOverridesSchema = flowOverridesSchema.extend({
  schedule: flowOverridesSchema.shape.schedule.nullable(),
  maxConcurrentRuns: flowOverridesSchema.shape.maxConcurrentRuns.nullable(),
  concurrency: flowOverridesSchema.shape.concurrency.nullable(),
});

export type FlowYamlOverrides = z.output<typeof flowYamlOverridesSchema>;

/** `option` as YAML sets it (its `null` included: removed), else as the code does. */
export function overridden<K extends keyof FlowOverrides & keyof FlowYamlOverrides>(
  option: K,
  code: FlowOverrides,
  yaml: FlowYamlOverrides | undefined,
): FlowYamlOverrides[K] {
  return yaml && Object.hasOwn(yaml, option) ? yaml[option] : code[option];
}

/** The flow's schedule as stored: code options, then YAML overrides (YAML wins; its `null` removes it); undefined without a schedule. */
export function resolveSchedule(flow: string, code: FlowOverrides, yaml: FlowYamlOverrides = {}): ScheduleDefinition | undefined {
  const o = { ...code, ...yaml };
  if (o.schedule === undefined || o.schedule === null) return undefined;
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
