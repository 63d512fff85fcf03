import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import type { Counter, Registry } from "prom-client";
import { promClient } from "../prom-client-lazy.js";
import { endTaskSilences, endFailureStreak, markStreakAlerted, recordTerminalFailure, runDurationMs, stuckRuns, type Db } from "@ax/store";
import { durationText, elapsed } from "@ax/common";
import { eventStreamKey, parseEntry, type AxEvent } from "../events/event.js";
import { closeRedis, duplicateRedis } from "../redis.js";
import { errorFingerprint } from "./fingerprint.js";
import { AlertSender } from "./alert-sender.js";
import { DEFAULT_ALERT_GROUP, type AlertGroup } from "./types.js";
import { RepeatedErrors } from "../repeated-errors.js";

/** The consumer group of every coordinator of a cluster: each event goes to one of them. */
export const ALERTS_CONSUMER_GROUP = "ax:alerts";
const BLOCK_MS = 1000;
const BATCH = 100;
/** An event a coordinator took but did not acknowledge this long ago (it died, or PostgreSQL failed) is taken over. */
const RECLAIM_IDLE_MS = 30_000;

/**
 * `ax_alert_deliveries_total{sink, outcome}`: `sent`, `failed`, `silenced` (held back by the
 * silence window, sink `-`) or `muted` (by an operator's mute, sink `-`).
 */
export function alertDeliveriesMetric(registry: Registry): Counter<"sink" | "outcome"> {
  const name = "ax_alert_deliveries_total";
  return (
    (registry.getSingleMetric(name) as Counter<"sink" | "outcome"> | undefined) ??
    new (promClient().Counter)({
      name,
      help: "Alert deliveries by sink and outcome (sent, failed, silenced, muted)",
      labelNames: ["sink", "outcome"],
      registers: [registry],
    })
  );
}

export interface AlertEvaluatorOptions {
  db: Db;
  redis: Redis;
  prefix: string;
  log: Logger;
  registry: Registry;
  /** The `alerts:` groups in force now (they follow config versions). */
  groups: () => Record<string, AlertGroup>;
  /** How often to look for runs stuck `running`. @defaultValue 30000 */
  stuckScanMs?: number | undefined;
}

/** What a task's alert carries of the event that raised it. */
function taskAlertFields(event: AxEvent, task: string) {
  return {
    flow: event.flow,
    task,
    runId: event.runId,
    nodeKey: event.nodeKey ?? null,
    attempt: event.attempt ?? null,
    businessKey: event.businessKey,
    eventId: event.id,
  };
}

/**
 * Turns the cluster's events into alerts, in the coordinator role. Every coordinator reads the
 * event stream through one consumer group, so each event is evaluated by one of them; the
 * de-duplication rows in PostgreSQL make the silence window hold across all of them.
 */
export class AlertEvaluator {
  private redis: Redis | undefined;
  private running: Promise<void> | undefined;
  private stuckTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly consumer = randomUUID();
  private readonly key: string;
  private readonly sender: AlertSender;
  private readonly warnedGroups = new Set<string>();

  private readonly errors: RepeatedErrors;

  constructor(private readonly o: AlertEvaluatorOptions) {
    this.key = eventStreamKey(o.prefix);
    this.sender = new AlertSender({ db: o.db, log: o.log, deliveries: alertDeliveriesMetric(o.registry) });
    this.errors = new RepeatedErrors(o.log);
  }

  async start(): Promise<void> {
    this.redis = duplicateRedis(this.o.redis, this.o.log, "alerts");
    try {
      await this.o.redis.xgroup("CREATE", this.key, ALERTS_CONSUMER_GROUP, "$", "MKSTREAM");
    } catch (error) {
      if (!String((error as Error).message).includes("BUSYGROUP")) throw error;
    }
    this.running = this.loop();
    this.stuckTimer = setInterval(() => {
      this.scanStuck().catch((err: unknown) => this.errors.warn(err, {}, "stuck-run scan failed; retrying"));
    }, this.o.stuckScanMs ?? 30_000);
    this.stuckTimer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.stuckTimer);
    if (this.redis) closeRedis(this.redis);
    await this.running;
    await this.sender.drain();
  }

  private async handle(event: AxEvent): Promise<void> {
    const groups = this.o.groups();
    if (Object.keys(groups).length === 0) return;
    switch (event.name) {
      case "task_failed":
        return this.onTaskFailed(event, groups);
      case "task_succeeded":
        return this.onTaskSucceeded(event, groups);
      case "run_succeeded":
      case "run_failed":
        return this.onRunFinished(event, groups);
      default:
        return;
    }
  }

  /** One pass over runs stuck `running`: one alert per flow per silence window. */
  private async scanStuck(): Promise<void> {
    const groups = this.o.groups();
    for (const [name, group] of Object.entries(groups)) {
      const threshold = group.triggers.stuckRunningMs;
      if (threshold === undefined) continue;
      const byFlow = new Map<string, Awaited<ReturnType<typeof stuckRuns>>>();
      for (const run of await stuckRuns(this.o.db, threshold)) {
        if (!this.runGroups(run.flow, groups).includes(name)) continue;
        byFlow.set(run.flow, [...(byFlow.get(run.flow) ?? []), run]);
      }
      for (const [flow, runs] of byFlow) {
        const oldest = runs[0]!;
        // When the newest of these runs became stuck: runs found again are no new alert held back,
        // and still stuck after the silence window they are alerted again as a reminder.
        const since = new Date(Math.max(...runs.map((r) => r.startedAt.getTime())) + threshold);
        await this.sender.raise(
          name,
          group,
          { kind: "stuck_running", flow, task: "", fingerprint: "" },
          {
            summary: `${oldest.stuckInFlow} run(s) of ${flow} still running after more than ${durationText(threshold)} (oldest ${oldest.runId}, since ${oldest.startedAt.toISOString()})`,
            flow,
            runId: oldest.runId,
            businessKey: oldest.businessKey,
            details: {
              thresholdMs: threshold,
              stuck: oldest.stuckInFlow,
              runs: runs.map((r) => ({ runId: r.runId, startedAt: r.startedAt.toISOString() })),
            },
          },
          { since },
        );
      }
    }
  }

  private async loop(): Promise<void> {
    // At once first: what a coordinator that died left is taken over when another starts.
    let reclaimAt = Date.now();
    while (!this.stopped) {
      try {
        if (Date.now() >= reclaimAt) {
          reclaimAt = Date.now() + RECLAIM_IDLE_MS;
          await this.reclaim();
        }
        const reply = (await this.redis!.xreadgroup(
          "GROUP",
          ALERTS_CONSUMER_GROUP,
          this.consumer,
          "COUNT",
          BATCH,
          "BLOCK",
          BLOCK_MS,
          "STREAMS",
          this.key,
          ">",
        )) as [string, [string, string[]][]][] | null;
        await this.process(reply?.[0]?.[1] ?? []);
      } catch (error) {
        if (this.stopped) return;
        if (String((error as Error).message).includes("NOGROUP")) {
          // The stream was deleted (FLUSHALL): the group goes with it.
          await this.o.redis.xgroup("CREATE", this.key, ALERTS_CONSUMER_GROUP, "$", "MKSTREAM").catch(() => {});
        } else {
          this.errors.warn(error, {}, "alert evaluation failed; retrying");
        }
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  }

  /**
   * Takes over every event left unacknowledged for RECLAIM_IDLE_MS (its evaluation failed, or its
   * coordinator died), oldest first, page by page. XPENDING and XCLAIM rather than XAUTOCLAIM,
   * which needs Redis 6.2 where ax runs on 5.0.
   */
  private async reclaim(): Promise<void> {
    for (let from = "-"; ; ) {
      const pending = (await this.redis!.xpending(this.key, ALERTS_CONSUMER_GROUP, from, "+", BATCH)) as [string, string, number, number][];
      const idle = pending.filter(([, , idleMs]) => idleMs >= RECLAIM_IDLE_MS).map(([id]) => id);
      if (idle.length > 0) {
        const claimed = ((await this.redis!.xclaim(this.key, ALERTS_CONSUMER_GROUP, this.consumer, RECLAIM_IDLE_MS, ...idle)) ?? []) as [
          string,
          string[] | null,
        ][];
        const entries = claimed.filter((entry): entry is [string, string[]] => Boolean(entry?.[1]));
        await this.process(entries);
        // Trimmed from the stream while pending: nothing is left to evaluate.
        const kept = new Set(entries.map(([id]) => id));
        const gone = idle.filter((id) => !kept.has(id));
        if (gone.length > 0) await this.redis!.xack(this.key, ALERTS_CONSUMER_GROUP, ...gone);
      }
      if (pending.length < BATCH || this.stopped) return;
      from = nextStreamId(pending.at(-1)![0]);
    }
  }

  /** Acknowledges what was evaluated; an event whose evaluation failed stays pending and is taken over later. */
  private async process(entries: [string, string[]][]): Promise<void> {
    if (entries.length === 0) return;
    const done: string[] = [];
    for (const entry of entries) {
      const event = parseEntry(entry);
      try {
        if (event) await this.handle(event);
        done.push(entry[0]);
      } catch (error) {
        this.o.log.warn({ err: error, eventId: entry[0] }, "could not evaluate an event for alerts; it is retried");
      }
    }
    if (done.length > 0) await this.redis!.xack(this.key, ALERTS_CONSUMER_GROUP, ...done);
  }

  private taskGroup(event: AxEvent, groups: Record<string, AlertGroup>): [string, AlertGroup] | undefined {
    const name = event.alertGroup ?? DEFAULT_ALERT_GROUP;
    const group = groups[name];
    if (!group && event.alertGroup && !this.warnedGroups.has(name)) {
      this.warnedGroups.add(name);
      this.o.log.warn(
        { group: name, task: event.task },
        `task ${event.task} names alert group "${name}", which alerts: does not define; its failures alert no one`,
      );
    }
    return group && [name, group];
  }

  /** Groups whose run-level triggers watch `flow`: those listing it, else `default`. */
  private runGroups(flow: string, groups: Record<string, AlertGroup>): string[] {
    const listing = Object.entries(groups)
      .filter(([, g]) => g.flows?.includes(flow))
      .map(([name]) => name);
    if (listing.length > 0) return listing;
    const fallback = groups[DEFAULT_ALERT_GROUP];
    return fallback && !fallback.flows ? [DEFAULT_ALERT_GROUP] : [];
  }

  private async onTaskFailed(event: AxEvent, groups: Record<string, AlertGroup>): Promise<void> {
    const found = this.taskGroup(event, groups);
    if (!found || !event.task) return;
    const [name, group] = found;
    const { triggers } = group;
    const tracksStreak = triggers.consecutiveFailures !== undefined || triggers.recovery;
    const streak = tracksStreak ? await recordTerminalFailure(this.o.db, event.flow, event.task) : undefined;
    const error = event.error ?? { name: "Error", message: "" };
    const fingerprint = errorFingerprint(error);
    const base = { ...taskAlertFields(event, event.task), error, fingerprint };
    let sent = false;
    if (triggers.terminalFailure) {
      sent = await this.sender.raise(
        name,
        group,
        { kind: "task_failed", flow: event.flow, task: event.task, fingerprint },
        {
          ...base,
          summary: `${event.flow}/${event.nodeKey ?? event.task} failed after ${event.attempt ?? 1} attempt(s): ${error.name}: ${error.message}`,
          details: {},
        },
      );
    }
    const n = triggers.consecutiveFailures;
    if (n !== undefined && streak && streak.failures === n) {
      sent =
        (await this.sender.raise(
          name,
          group,
          { kind: "consecutive_failures", flow: event.flow, task: event.task, fingerprint: "" },
          {
            ...base,
            summary: `${event.flow}/${event.task} failed ${n} times in a row (last: ${error.name}: ${error.message})`,
            details: { failures: streak.failures },
          },
        )) || sent;
    }
    if (sent && streak && !streak.alerted) await markStreakAlerted(this.o.db, event.flow, event.task);
  }

  private async onTaskSucceeded(event: AxEvent, groups: Record<string, AlertGroup>): Promise<void> {
    const found = this.taskGroup(event, groups);
    if (!found || !event.task) return;
    const [name, group] = found;
    if (group.triggers.consecutiveFailures === undefined && !group.triggers.recovery) return;
    // The delete hands the ended streak to exactly one coordinator: no claim needed for the notice.
    const ended = await endFailureStreak(this.o.db, event.flow, event.task);
    if (!ended?.alerted || !group.triggers.recovery) return;
    if (await this.sender.muted(name, event.flow, event.task)) {
      await endTaskSilences(this.o.db, event.flow, event.task);
      return;
    }
    // One recovery per silence window: a task that keeps failing and succeeding (a backfill over
    // good and bad dates) would otherwise alert, recover and alert again at every turn. Held back,
    // the recovery leaves the failures' silence in force, so the flapping stays quiet until it ends.
    const claim = await this.sender.claim(name, group, { kind: "recovered", flow: event.flow, task: event.task, fingerprint: "" });
    if (!claim.send) return;
    const heldBack = await endTaskSilences(this.o.db, event.flow, event.task);
    this.sender.send(
      name,
      group,
      {
        kind: "recovered",
        ...taskAlertFields(event, event.task),
        summary: `${event.flow}/${event.task} recovered: succeeded after ${ended.failures} failure(s) in a row`,
        details: { failures: ended.failures },
      },
      heldBack + claim.suppressed,
    );
  }

  private async onRunFinished(event: AxEvent, groups: Record<string, AlertGroup>): Promise<void> {
    const watching = this.runGroups(event.flow, groups).filter((name) => groups[name]!.triggers.slowRunMs !== undefined);
    if (watching.length === 0) return;
    const durationMs = await runDurationMs(this.o.db, event.runId);
    if (durationMs === undefined) return;
    for (const name of watching) {
      const group = groups[name]!;
      const threshold = group.triggers.slowRunMs!;
      if (durationMs <= threshold) continue;
      const outcome = event.name === "run_succeeded" ? "succeeded" : "failed";
      await this.sender.raise(
        name,
        group,
        { kind: "slow_run", flow: event.flow, task: "", fingerprint: "" },
        {
          flow: event.flow,
          runId: event.runId,
          businessKey: event.businessKey,
          eventId: event.id,
          summary: `run ${event.runId} of ${event.flow} ${outcome} but took ${elapsed(Math.round(durationMs))}, over the ${durationText(threshold)} threshold`,
          details: { durationMs: Math.round(durationMs), thresholdMs: threshold, outcome },
        },
      );
    }
  }
}

/** The smallest stream id after `id` (an exclusive range start, `(id`, needs Redis 6.2). */
function nextStreamId(id: string): string {
  const [ms, seq] = id.split("-");
  return `${ms}-${BigInt(seq ?? "0") + 1n}`;
}
