import { z } from "zod";
import { matcherName } from "../options.js";
import { unsizedPools, type CodeRetryPolicy, type KnownNames, type RuntimeConfig } from "./runtime-config.js";

/** What may surprise in a version just stored, one sentence each (`ConfigApplied.warnings`). */
export function configWarnings(config: RuntimeConfig, known: KnownNames, served: Iterable<string>): string[] {
  return [...unsizedPools(config, known), ...retryListWarnings(config, known), ...unservedQueueWarnings(config, served)];
}

const codeRetrySchema = z.object({
  retries: z.number().optional(),
  retryOn: z.array(z.string()).optional(),
  noRetryOn: z.array(z.string()).optional(),
});

/** A task's retry options out of its stored code options; undefined when this version cannot read them. */
export function codeRetryPolicy(options: Record<string, unknown>): CodeRetryPolicy | undefined {
  const parsed = codeRetrySchema.safeParse(options);
  return parsed.success ? parsed.data : undefined;
}

const listed = (names: string[]) => names.join(", ");
const isAre = (names: string[]) => (names.length === 1 ? "is" : "are");

/**
 * A YAML error list the task's code contradicts, one sentence per task and list. A YAML list
 * replaces the code's list of the same name (that is how a list is changed, not warned about) but
 * leaves the other one in force, and noRetryOn wins over retryOn in the worker's retry policy: an
 * error in both is never retried, whichever side wrote which.
 */
export function retryListWarnings(config: RuntimeConfig, known: KnownNames): string[] {
  const warnings: string[] = [];
  for (const [task, yaml] of Object.entries(config.tasks)) {
    const code = known.taskRetries?.[task];
    // With no retries the lists decide nothing.
    if (!code || (yaml.retries ?? code.retries ?? 0) === 0) continue;
    // retry_on: null lifts the code's list: nothing left for no_retry_on to contradict.
    if (yaml.noRetryOn && yaml.retryOn === undefined && code.retryOn) {
      const both = yaml.noRetryOn.map(matcherName).filter((name) => code.retryOn!.includes(name));
      const rest = code.retryOn.filter((name) => !both.includes(name));
      if (both.length > 0) {
        const meant =
          rest.length > 0
            ? `write retry_on here without ${listed(both)} (retry_on: [${listed(rest)}])`
            : "set retries: 0 here (the code's retryOn lists no other error)";
        warnings.push(
          `tasks.${task}.no_retry_on: ${listed(both)} ${isAre(both)} also in the task's retryOn in code; no_retry_on wins, so ${listed(both)} will not be retried. If that is meant, ${meant}; otherwise remove ${listed(both)} from no_retry_on`,
        );
      }
    }
    if (yaml.retryOn && !yaml.noRetryOn && code.noRetryOn) {
      const both = yaml.retryOn.map(matcherName).filter((name) => code.noRetryOn!.includes(name));
      const rest = code.noRetryOn.filter((name) => !both.includes(name));
      if (both.length > 0) {
        warnings.push(
          `tasks.${task}.retry_on: ${listed(both)} ${isAre(both)} also in the task's noRetryOn in code, which wins, so ${listed(both)} will still not be retried. To retry ${listed(both)}, write no_retry_on here without ${listed(both)} (no_retry_on: [${listed(rest)}]); otherwise remove ${listed(both)} from retry_on`,
        );
      }
    }
  }
  return warnings;
}

/**
 * YAML `queue`s no live worker takes the task's jobs from, one sentence per task. `served` holds
 * the task queues (`group.task`) live workers fetch from: a worker picks them when it starts, from
 * its groups (`--queues`) and the queue each of its tasks is in then, so a worker running when a
 * version moves a task keeps fetching from the old queue. With no live worker at all nothing is
 * said: a version is often applied before the workers are deployed.
 */
export function unservedQueueWarnings(config: RuntimeConfig, served: Iterable<string>): string[] {
  const queues = [...served].map((name) => {
    // Group names cannot contain `.`, task names can: the first `.` separates them.
    const dot = name.indexOf(".");
    return { group: name.slice(0, dot), task: name.slice(dot + 1) };
  });
  if (queues.length === 0) return [];
  const groups = [...new Set(queues.map((q) => q.group))].sort();
  const warnings: string[] = [];
  for (const [task, yaml] of Object.entries(config.tasks)) {
    const queue = yaml.queue;
    if (queue === undefined || queues.some((q) => q.group === queue && q.task === task)) continue;
    const runIn = [...new Set(queues.filter((q) => q.task === task).map((q) => q.group))].sort();
    warnings.push(
      runIn.length > 0
        ? `tasks.${task}.queue: no live worker runs task "${task}" in queue "${queue}" (live workers run it in ${listed(runIn)}), so its jobs will wait; start a worker with --queues ${queue} (one started before this version keeps the queues its tasks were in then: restart it), or fix the queue name`
        : `tasks.${task}.queue: no live worker runs task "${task}" in queue "${queue}" (live workers serve ${listed(groups)}, and none runs this task), so its jobs will wait; start a worker with --queues ${queue} whose flows define the task, or fix the queue name`,
    );
  }
  return warnings;
}
