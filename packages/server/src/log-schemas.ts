import { z } from "zod";
import { storableText, wholeNumberParam } from "./api-schemas.js";

/** `GET /api/runs/:id/logs` query: narrow to a node and attempt, and (following) to lines after a seq. */
export const logsQuery = z.object({
  node: storableText.min(1).optional().meta({ description: "node key" }),
  attempt: wholeNumberParam(1).optional().meta({ description: "attempt number" }),
  after: wholeNumberParam(0).optional().meta({ description: "only lines with a greater seq (seq counts within an attempt)" }),
});

export const logLine = z.object({
  node: z.string(),
  attempt: z.number().int(),
  seq: z.number().int(),
  at: z.string().meta({ description: "ISO 8601" }),
  level: z.enum(["debug", "info", "warn", "error"]),
  msg: z.string(),
  fields: z.record(z.string(), z.unknown()).nullable(),
});

export const logsAnswer = z.object({
  lines: z.array(logLine),
  truncated: z
    .array(z.object({ node: z.string(), attempt: z.number().int() }))
    .meta({ description: "attempts that logged past 500 lines / 64 KiB: their last line says how many were dropped" }),
});
