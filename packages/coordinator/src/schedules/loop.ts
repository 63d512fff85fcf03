import { setTimeout as sleep } from "node:timers/promises";
import { getSchedules, lastTickDate, scheduleTx, type StoredSchedule } from "@ax/store";
import { catchUpTicks, countFireTimes, dueTicks, MISSED_AFTER_MS } from "./catch-up.js";
import { nextFireTimes } from "./fire-times.js";
import type { LagObserver } from "./lag-metric.js";
import { claimTick, releaseQueuedTick, type TickDeps } from "./tick-claim.js";
import { RepeatedErrors } from "../repeated-errors.js";

export interface ScheduleLoopOptions extends TickDeps {
  /** The flows this coordinator defines; their stored schedules are the ones it ticks. */
  flows: string[];
  observeLag?: LagObserver | undefined;
  /** Longest sleep between wakes, whatever the next fire time. @defaultValue 60000 */
  maxSleepMs?: number | undefined;
  /** While a tick buffered by `overlap: queue` waits, how often to look whether it may start. @defaultValue 250 */
  queuedPollMs?: number | undefined;
  /** After a failed claim (database unreachable), how long before trying that tick again. @defaultValue 1000 */
  retryMs?: number | undefined;
}

/** Live ticks later than this are still observed but logged, so a stalled loop is visible. */
const LATE_TICK_MS = 1000;
/** How soon a schedule found stored anew by another process is read again. */
const STALE_READ_MS = 50;

/**
 * The schedule loop of a coordinator: it sleeps until the next fire time of its flows' schedules
 * (with a cap), then claims every tick that fell due. Any number of coordinators may run it:
 * each tick is claimed once in PostgreSQL. On start it first runs the flows' catch-up ticks.
 */
export class ScheduleLoop {
  private readonly wake = new AbortController();
  /** Aborted to cut the current sleep short (a reload); replaced after each use. */
  private nudge = new AbortController();
  private running: Promise<void> | undefined;
  private schedules: StoredSchedule[] = [];
  /** Per flow, the instant up to which fire times have been handled. */
  private readonly cursor = new Map<string, Date>();
  /** A tick buffered by `overlap: queue` waits: wake often to start it when the earlier run ends. */
  private hasQueued = false;
  /** A claim found the stored schedule changed under this process: read the schedules again. */
  private stale = false;

  private readonly errors: RepeatedErrors;

  constructor(private readonly options: ScheduleLoopOptions) {
    this.errors = new RepeatedErrors(options.log);
  }

  async start(): Promise<void> {
    this.schedules = await getSchedules(this.options.db, this.options.flows);
    const now = new Date();
    for (const schedule of this.schedules) {
      // Owed from the last tick, the last resume or when the cron took its current form
      // (`updatedAt`), whichever is latest: a cron changed or restored while no coordinator ran
      // owes nothing from before.
      const since = latest(await lastTickDate(this.options.db, schedule.flow), schedule.resumedAt, schedule.updatedAt);
      const missed = catchUpTicks(schedule, since, now);
      for (const tick of missed) await this.claim(schedule, tick, false);
      this.cursor.set(schedule.flow, now);
      if (since && !schedule.paused) this.sayMissed(schedule, since, now, missed);
    }
    if (!(await this.hasWork())) return;
    this.options.log.info({ flows: this.schedules.map((s) => s.flow) }, "schedule loop started");
    this.running = this.loop();
  }

  /**
   * Re-reads the stored schedules (a new config version changed them): a flow newly scheduled
   * ticks from now on, a changed cron takes effect at once, a removed one stops.
   */
  async reload(): Promise<void> {
    this.adopt(await getSchedules(this.options.db, this.options.flows));
    if (this.wake.signal.aborted) return;
    if (!this.running && (await this.hasWork())) this.running = this.loop();
    this.nudge.abort();
  }

  /**
   * Takes the schedules just read. One this loop did not tick, or whose cron or time zone changed,
   * ticks from now on: a fire time it passed before it was set (a daily cron applied at 02:00:03)
   * was not owed, and catchUp is for coordinators that were down, not for a cron that was not yet there.
   */
  private adopt(schedules: StoredSchedule[]): void {
    const now = new Date();
    const held = new Map(this.schedules.map((s) => [s.flow, s]));
    for (const schedule of schedules) {
      const before = held.get(schedule.flow);
      if (!before || before.cron !== schedule.cron || before.timezone !== schedule.timezone) this.cursor.set(schedule.flow, now);
    }
    for (const flow of this.cursor.keys()) if (!schedules.some((s) => s.flow === flow)) this.cursor.delete(flow);
    this.schedules = schedules;
  }

  /** A schedule to tick, or a tick buffered by `overlap: queue` still to release (its schedule may be gone). */
  private async hasWork(): Promise<boolean> {
    if (this.schedules.length > 0) return true;
    return (await scheduleTx.flowsWithWaitingTicks(this.options.db, this.options.flows)).length > 0;
  }

  async stop(): Promise<void> {
    this.wake.abort();
    await this.running;
  }

  private async loop(): Promise<void> {
    while (!this.wake.signal.aborted) {
      // Before this pass reads the schedules: a reload during it cuts the coming sleep short.
      if (this.nudge.signal.aborted) this.nudge = new AbortController();
      let delay: number;
      try {
        if (this.stale) {
          this.stale = false;
          this.adopt(await getSchedules(this.options.db, this.options.flows));
        }
        await this.releaseQueued();
        delay = (await this.tickDue()) ? this.sleepMs() : (this.options.retryMs ?? 1000);
        // A claim found the schedule stored anew (a rolling deploy changed the cron): read it within
        // STALE_READ_MS, not at the old cron's next fire time, which would skip the new cron's ticks
        // until then. Not at once: should two processes keep storing different crons, this loop
        // must not spin on PostgreSQL.
        if (this.stale) delay = Math.min(delay, STALE_READ_MS);
      } catch (error) {
        this.errors.warn(error, {}, "schedule loop pass failed; will retry");
        delay = this.options.retryMs ?? 1000;
      }
      await sleep(delay, undefined, { signal: AbortSignal.any([this.wake.signal, this.nudge.signal]) }).catch(() => undefined);
    }
  }

  /** Claims every tick due by now; false when one failed (its cursor stays before it, so it is retried). */
  private async tickDue(): Promise<boolean> {
    const now = new Date();
    let allClaimed = true;
    for (const schedule of this.schedules) {
      const from = this.cursor.get(schedule.flow) ?? now;
      const { ticks: due, skipped, skippedCapped } = dueTicks(schedule, from, now);
      // A paused schedule makes no ticks, so it missed none; the copy read at adoption may predate a pause made elsewhere.
      if (skipped > 0 && !(await this.pausedNow(schedule))) {
        this.options.log.warn(
          { flow: schedule.flow, skipped: skippedCapped ? `${skipped}+` : skipped, catchUp: schedule.catchUp },
          "schedule ticks missed while this coordinator could not run or reach PostgreSQL are skipped, as the flow's catchUp says",
        );
      }
      let handled = now;
      for (const tick of due) {
        const claimed = await this.claim(schedule, tick, true).then(
          () => true,
          (error: unknown) => {
            this.errors.warn(error, { flow: schedule.flow, tick }, "could not claim a schedule tick; will retry");
            return false;
          },
        );
        if (!claimed) {
          handled = new Date(tick.getTime() - 1);
          allClaimed = false;
          break;
        }
      }
      this.cursor.set(schedule.flow, handled);
    }
    return allClaimed;
  }

  /**
   * Ticks that fell due while no coordinator ran: how many catch-up ran and how many it left, so a
   * gap in a flow's runs after an outage is explained where the operator looks first.
   */
  private sayMissed(schedule: StoredSchedule, since: Date, now: Date, caughtUp: Date[]): void {
    // Ticks a few seconds old may be another coordinator's to claim (a rolling restart): not counted.
    const cutoff = new Date(now.getTime() - MISSED_AFTER_MS);
    const gap = countFireTimes(schedule, since, cutoff);
    const ran = caughtUp.filter((t) => t <= cutoff).length;
    const skipped = gap.count - ran;
    if (skipped <= 0) return;
    this.options.log.info(
      { flow: schedule.flow, since, skipped: gap.capped ? `${skipped}+` : skipped, ran, catchUp: schedule.catchUp },
      "schedule ticks that fell due while no coordinator ran are skipped, as the flow's catchUp says",
    );
  }

  private async pausedNow(schedule: StoredSchedule): Promise<boolean> {
    if (schedule.paused) return true;
    const [stored] = await getSchedules(this.options.db, [schedule.flow]).catch(() => []);
    return stored?.paused ?? false;
  }

  private async claim(schedule: StoredSchedule, tick: Date, live: boolean): Promise<void> {
    const outcome = await claimTick(this.options, schedule, tick);
    if (outcome.status === "changed") {
      // Another coordinator stored a different cron (a rolling deploy): tick the stored one from now on.
      this.options.log.info({ flow: schedule.flow, cron: schedule.cron }, "schedule changed by another process; reading it again");
      this.stale = true;
    }
    if (!("createdAt" in outcome)) return;
    if (outcome.status !== "created") this.hasQueued ||= outcome.status === "queued";
    else if (live) {
      const lagMs = outcome.createdAt.getTime() - tick.getTime();
      this.options.observeLag?.(schedule.flow, lagMs / 1000);
      if (lagMs > LATE_TICK_MS) this.options.log.warn({ flow: schedule.flow, tick, lagMs }, "schedule tick started late");
    }
    this.options.log.debug({ flow: schedule.flow, tick, ...outcome, live }, "schedule tick");
  }

  /**
   * Buffered ticks (this coordinator's or another's) whose earlier run has ended get their run,
   * also of a flow whose overlap is no longer `queue` or whose schedule was removed since: the
   * tick was accepted to run later when it came, and would otherwise wait forever (or start on
   * its old date when the schedule came back).
   */
  private async releaseQueued(): Promise<void> {
    const waiting = await scheduleTx.flowsWithWaitingTicks(this.options.db, this.options.flows);
    this.hasQueued = waiting.length > 0;
    for (const flow of waiting) await releaseQueuedTick(this.options, flow);
  }

  private sleepMs(): number {
    const now = Date.now();
    const nextFire = Math.min(
      ...this.schedules.map((s) => nextFireTimes(s, this.cursor.get(s.flow) ?? new Date(now), 1)[0]?.getTime() ?? Infinity),
    );
    const cap = this.hasQueued ? (this.options.queuedPollMs ?? 250) : (this.options.maxSleepMs ?? 60_000);
    return Math.max(0, Math.min(nextFire - now, cap));
  }
}

/** The latest of the last tick and the later bounds; none before the flow's first tick, which owes no catch-up. */
function latest(lastTick: Date | null, ...bounds: (Date | null)[]): Date | null {
  if (!lastTick) return null;
  return bounds.reduce<Date>((at, bound) => (bound && bound > at ? bound : at), lastTick);
}
