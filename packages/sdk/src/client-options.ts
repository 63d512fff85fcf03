import { z } from "zod";
import { RUN_STATUSES, RUN_TRIGGERS } from "@ax/store";
import { durationMs } from "./duration.js";
import { connectionOptions, flowList, shown, strictOptions, validDate, wholeNumber } from "./option-checks.js";

/** `new Client(options)`: the connection options, the flows whose key functions apply, the payload cap. */
export const clientOptionsSchema = strictOptions({
  ...connectionOptions,
  flows: flowList.optional(),
  maxPayloadBytes: wholeNumber(1).optional(),
});

const optionsObject = <S extends z.ZodRawShape>(shape: S) =>
  z.object(shape, { error: (issue) => `must be an object of options, got ${shown(issue.input)}` });
const oneOf = (values: readonly string[]) =>
  z.enum(values as [string, ...string[]], {
    error: (issue) => `must be one of ${values.join(", ")}, got ${shown(issue.input)}`,
  });
const text = z.string({ error: (issue) => `must be a string, got ${shown(issue.input)}` });

export const runFilterSchema = optionsObject({
  flow: text.optional(),
  status: oneOf(RUN_STATUSES).optional(),
  businessKey: text.optional(),
  trigger: oneOf(RUN_TRIGGERS).optional(),
  from: validDate.optional(),
  to: validDate.optional(),
  cursor: text.optional(),
  limit: wholeNumber(1).optional(),
});

/** `{ limit }` of `listBackfills`, `audit`. */
export const limitSchema = optionsObject({ limit: wholeNumber(1).optional() });

export const waitSchema = optionsObject({ timeout: durationMs.optional() });

export const logQuerySchema = optionsObject({
  node: text.optional(),
  attempt: wholeNumber(1).optional(),
  after: wholeNumber(0).optional(),
});

export const payloadsSchema = z.array(z.unknown(), {
  error: (issue) => `must be an array of payloads (one run each), got ${shown(issue.input)}`,
});

export const backfillSchema = optionsObject({
  maxConcurrentRuns: wholeNumber(1).optional(),
  maxTicks: wholeNumber(1).optional(),
});

export const pruneSchema = optionsObject({ batch: wholeNumber(1).optional() });
