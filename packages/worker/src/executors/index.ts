import { ChildPool } from "./child-pool.js";
import { executeInline, type AttemptInput, type AttemptResult } from "./inline.js";
import { executeProcess } from "./process.js";
import { executeThread } from "./thread.js";

export type { AttemptInput, AttemptResult } from "./inline.js";

const pool = new ChildPool();

/** Runs one attempt on the executor its task declares (`inline` unless set). */
export function execute(input: AttemptInput): Promise<AttemptResult> {
  switch (input.task.options.executor) {
    case "thread":
      return executeThread(input, pool);
    case "process":
      return executeProcess(input, pool);
    default:
      return executeInline(input);
  }
}

/** Stops the idle threads and child processes kept warm for later attempts. */
export function closeExecutors(): Promise<void> {
  return pool.close();
}
