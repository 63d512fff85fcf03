import pino, { type Logger } from "pino";
import { envLogLevel } from "@ax/common";

/**
 * The logger of a command's client: its connections' warnings ("Redis connection failed;
 * reconnecting") as one plain line each on stderr, not a JSON record with a stack. The command
 * itself says what failed when it gives up.
 */
export function plainLogger(): Logger {
  return pino(
    { level: envLogLevel("warn") },
    {
      write(line: string) {
        const record = JSON.parse(line) as { msg?: string; err?: { message?: string } };
        const cause = record.err?.message ? ` (${record.err.message})` : "";
        process.stderr.write(`ax: ${record.msg ?? ""}${cause}\n`);
      },
    },
  );
}
