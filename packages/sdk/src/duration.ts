import { z } from "zod";
import { MAX_TIMER_MS, parseDuration } from "@ax/common";

export { MAX_TIMER_MS, parseDuration, type Duration } from "@ax/common";

const DURATION_FORMS = 'seconds as a number or a string like "500ms", "10s", "5m", "1h"';

/** zod: a duration in, milliseconds out. */
export const durationMs = z
  .union([z.number(), z.string()], {
    // A required duration left out (`rate_limit: { max: 5 }`) is missing, not of the wrong kind.
    error: (issue) => (issue.input === undefined ? `missing (a duration: ${DURATION_FORMS})` : `must be a duration: ${DURATION_FORMS}`),
  })
  .transform((value, ctx) => {
    try {
      return parseDuration(value);
    } catch (error) {
      ctx.addIssue({ code: "custom", message: (error as Error).message });
      return z.NEVER;
    }
  });

/** zod: a duration that a timer can hold (timeouts), in milliseconds; 0 (or under half a millisecond) would set no limit at all. */
export const timerMs = durationMs
  .refine((millis) => millis >= 1, { message: "must be at least 1ms; leave the option unset for no limit" })
  .refine((millis) => millis <= MAX_TIMER_MS, {
    message: `must be at most ${MAX_TIMER_MS} ms (about 24.8 days): a longer timer would fire at once`,
  });
