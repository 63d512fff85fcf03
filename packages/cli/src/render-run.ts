import pc from "picocolors";
import { DEFAULT_LEASE_MS, elapsed } from "@ax/common";
import type { Duration, RunInfo, TaskRunInfo } from "ax-scheduler";

const COLOURS: Record<string, (s: string) => string> = {
  success: pc.green,
  failed: pc.red,
  cancelled: pc.gray,
  skipped: pc.gray,
  running: pc.blue,
  queued: pc.cyan,
  retrying: pc.yellow,
  pending: pc.dim,
  timed_out: pc.red,
  heartbeat_lost: pc.red,
  crashed: pc.red,
};

const paint = (status: string) => (COLOURS[status] ?? ((s: string) => s))(status);

function duration(from: string | null, to: string | null): string {
  if (!from || !to) return "";
  return elapsed(new Date(to).getTime() - new Date(from).getTime());
}

function waitedMs(run: RunInfo): number {
  return run.startedAt ? new Date(run.startedAt).getTime() - new Date(run.createdAt).getTime() : 0;
}

/** A killed worker's attempt reads `running` until a worker of its queue takes the job back: a silent worker says why it may never finish. */
function silence(worker: string, silentMs: number | null): string {
  if (silentMs === null) return "";
  if (silentMs >= DEFAULT_LEASE_MS)
    return `\n      ${pc.red(`worker ${worker} silent for ${elapsed(silentMs)}: presumed crashed; the next worker to fetch its job, or a coordinator's reconciler, ends the attempt as crashed and starts the node again (a crash is retried whatever retries says, for a node's first 3 crashes); if that does not happen within a minute, check that a coordinator runs and a worker serves that queue`)}`;
  return `\n      ${pc.yellow(`worker ${worker} silent for ${elapsed(silentMs)} (it renews its lease every second)`)}`;
}

function taskLine(task: TaskRunInfo, upstream: string[], now: Date): string {
  const tries = task.attempts.length;
  const parts = [
    `  ${paint("●")} ${task.key.padEnd(24)} ${paint(task.status).padEnd(18)}`,
    `${tries} attempt${tries === 1 ? "" : "s"}`.padEnd(11),
    duration(task.startedAt, task.finishedAt).padEnd(8),
  ];
  if (upstream.length) parts.push(pc.dim(`<- ${upstream.join(", ")}`));
  let line = parts.join(" ");
  if (task.nextRetryAt && task.status === "retrying") line += `\n      next retry at ${task.nextRetryAt}`;
  // A node that runs long is the first suspect of a run that does not finish: for how long, and where.
  const current = task.attempts.at(-1);
  if (task.status === "running" && current && !current.finishedAt) {
    line += `\n      running for ${duration(current.startedAt, now.toISOString())} on ${current.worker} (attempt ${current.n}, since ${current.startedAt})`;
    line += silence(current.worker, current.workerSilentMs);
  }
  // How far a node got before it failed (a lost heartbeat, a timeout) is the first question about it.
  if (task.progress !== null && task.status === "running") line += `\n      progress ${JSON.stringify(task.progress)}`;
  else if (task.progress !== null && task.status !== "success") line += `\n      last progress ${JSON.stringify(task.progress)}`;
  // One attempt is the node's line itself; with more, each says how it ended, so a retried success still shows why it was retried.
  const only = task.attempts[0];
  // Its outcome says more than the node's status when they differ: failed by `timed_out`, `crashed`.
  if (tries === 1 && only?.outcome && only.outcome !== task.status) line += `\n      ${pc.dim("attempt 1")} ${paint(only.outcome)}`;
  if (tries > 1) {
    for (const a of task.attempts) {
      const outcome = a.outcome ?? "running";
      const why = a.error ? `  ${a.error.name}: ${a.error.message.split("\n")[0]}` : "";
      line += `\n      ${pc.dim(`attempt ${a.n}`)} ${paint(outcome).padEnd(24)} ${duration(a.startedAt, a.finishedAt).padEnd(8)}${pc.dim(why)}`;
    }
  }
  if (task.reusedFrom) line += `\n      ${pc.dim(`reused from run ${task.reusedFrom}`)}`;
  if (task.waitingFor) line += `\n      ${pc.dim(`waiting: ${task.waitingFor}`)}`;
  // A node running again (or queued for it) still carries its previous attempt's error: under the
  // new attempt it would read as that attempt's failure. The attempts' lines above keep it.
  const again = task.status === "running" || (task.status === "queued" && tries > 0);
  if (task.error && !again) line += `\n      ${pc.red(`${task.error.name}: ${task.error.message}`)}`;
  if (task.error?.notRetried) line += `\n      ${pc.dim(`not retried: ${task.error.notRetried}`)}`;
  if (task.error?.notifyOnly) line += `\n      ${pc.dim("notify_only: the run's outcome ignores this failure")}`;
  return line;
}

/** The run as text: a header, then each node of the DAG (in order) with its state and inputs. */
export function renderRun(run: RunInfo, now = new Date()): string {
  const header = [
    `run ${run.id}  ${pc.bold(run.flow)} v${run.flowVersion}  ${paint(run.status)}`,
    `  trigger ${run.trigger}` +
      (run.businessKey ? `  business key ${run.businessKey}` : "") +
      (run.idempotencyKey ? `  idempotency key ${run.idempotencyKey}` : "") +
      (run.finishedAt
        ? run.startedAt
          ? `  took ${duration(run.startedAt, run.finishedAt)}`
          : `  ${run.status} before it started`
        : run.startedAt
          ? `  running for ${duration(run.startedAt, now.toISOString())}`
          : "  not started yet") +
      // A delayed run, or one held by a limit, waited before its first start: not part of what it took.
      (waitedMs(run) >= 1000 ? ` (started ${duration(run.createdAt, run.startedAt)} after it was triggered)` : ""),
    ...(run.logicalDate ? [`  logical date ${run.logicalDate}`] : []),
    ...(run.rerunOf ? [`  rerun of ${run.rerunOf}`] : []),
    ...(run.waitingFor ? [`  waiting: ${run.waitingFor}`] : []),
  ];
  return [...header, ...run.tasks.map((t) => taskLine(t, t.upstream, now))].join("\n");
}

/** What `ax trigger` and `ax rerun` print: the new run's id, or with `--wait` the finished run (exit code 1 unless it succeeded). */
export async function printRunOrWait(
  client: { waitForRun(runId: string, options: { timeout: Duration }): Promise<RunInfo> },
  runId: string,
  flags: { wait?: boolean | undefined; timeout: Duration },
): Promise<void> {
  if (!flags.wait) {
    console.log(runId);
    return;
  }
  const run = await client.waitForRun(runId, { timeout: flags.timeout });
  console.log(renderRun(run));
  if (run.status !== "success") process.exitCode = 1;
}
