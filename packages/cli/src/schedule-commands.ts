import type { Command } from "commander";
import type { ScheduleInfo } from "ax-scheduler";
import type { RunsApi } from "./runs-api.js";

type WithClient = (fn: (client: RunsApi) => Promise<void>) => Promise<void>;

/**
 * An instant as the schedule's zone reads it, with the offset: `2026-12-03 02:00:00 +08:00`. A
 * cron is written in its zone's wall-clock time, so that is the time to check it against.
 */
export function inZone(date: Date, timeZone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-CA", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      timeZoneName: "longOffset",
    })
      .formatToParts(date)
      .map((p) => [p.type, p.value]),
  );
  const offset = parts.timeZoneName === "GMT" ? "+00:00" : String(parts.timeZoneName).replace("GMT", "");
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second} ${offset}`;
}

export function describeSchedule(s: ScheduleInfo): string {
  const tick = s.lastTick
    ? `${s.lastTick.logicalDate.toISOString()} ${s.lastTick.status}${s.lastTick.runId ? ` run ${s.lastTick.runId} ${s.lastTick.runStatus ?? "(pruned)"}` : ""}${s.lastTick.reason ? ` (${s.lastTick.reason})` : ""}`
    : "never";
  return [
    `${s.flow}  cron "${s.cron}"  zone ${s.timezone}  ${s.paused ? "PAUSED" : "active"}  overlap ${s.overlap}  catch-up ${s.catchUp}`,
    // A cron such as "0 0 30 2 *" (February 30th) parses but never fires.
    // Paused, the times are when it would fire: the schedule makes no run until it is resumed.
    `  ${s.paused ? "next if resumed" : "next"} (${s.timezone}): ${s.nextFireTimes.length ? s.nextFireTimes.map((d) => inZone(d, s.timezone)).join(", ") : "never (the cron matches no date)"}`,
    `  last tick: ${tick}`,
    ...(s.overdueSince
      ? [
          `  OVERDUE: no tick since it should have fired at ${inZone(s.overdueSince, s.timezone)}: is a coordinator running with this flow in its entry (ax coordinator <entry>)? If its code is gone for good, retire it (ax flow retire ${s.flow})`,
        ]
      : []),
  ].join("\n");
}

/** `ax schedules` and `ax schedule pause|resume <flow>`; they also reach an `ax dev`'s embedded history through its API. */
export function addScheduleCommands(program: Command, withClient: WithClient): void {
  program
    .command("schedules")
    .description("list schedules: cron, zone, paused, next 3 fire times, last tick and its run's status")
    .option("--json", "print them as JSON")
    .action(async (raw: { json?: boolean }) => {
      await withClient(async (client) => {
        const schedules = await client.listSchedules();
        if (raw.json) console.log(JSON.stringify(schedules, null, 2));
        else
          console.log(
            schedules.length
              ? schedules.map(describeSchedule).join("\n")
              : "no schedules (a schedule is registered when a coordinator defining it starts)",
          );
      });
    });

  const schedule = program.command("schedule").description("pause or resume a flow's schedule (stored, cluster-wide, survives restarts)");
  for (const action of ["pause", "resume"] as const) {
    schedule
      .command(`${action} <flow>`)
      .description(action === "pause" ? "stop the flow's ticks until resumed" : "tick again from the next fire time")
      .action(async (flow: string) => {
        await withClient(async (client) => {
          const result = action === "pause" ? await client.pauseSchedule(flow) : await client.resumeSchedule(flow);
          console.log(`schedule of ${result.flow} ${result.paused ? "paused" : "resumed"}`);
        });
      });
  }
}
