import { sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import { rows } from "./raw.js";

export interface AlertMute {
  id: number;
  group: string;
  flow: string | null;
  task: string | null;
  until: Date;
  createdAt: Date;
  createdBy: string;
  reason: string | null;
}

type MuteRow = {
  id: number | string;
  alert_group: string;
  flow: string | null;
  task: string | null;
  until: Date | string;
  created_at: Date | string;
  created_by: string;
  reason: string | null;
};

const muteOf = (r: MuteRow): AlertMute => ({
  id: Number(r.id),
  group: r.alert_group,
  flow: r.flow,
  task: r.task,
  until: new Date(r.until),
  createdAt: new Date(r.created_at),
  createdBy: r.created_by,
  reason: r.reason,
});

/** Ended mutes are kept this long, so `ax alerts mutes --ended` can still say who muted what. */
const KEEP_ENDED_DAYS = 30;

export interface NewAlertMute {
  group: string;
  flow?: string | undefined;
  task?: string | undefined;
  forMs: number;
  /** Who muted: `cli:<os user>` or the API token's name. */
  createdBy: string;
  reason?: string | undefined;
}

/** Stores a mute lasting `forMs` from now on PostgreSQL's clock; mutes ended long ago go in the same call. */
export async function insertAlertMute(db: Db, mute: NewAlertMute): Promise<AlertMute> {
  await db.execute(sql`delete from alert_mutes where until < now() - make_interval(days => ${KEEP_ENDED_DAYS})`);
  const [row] = await rows<MuteRow>(
    db,
    sql`insert into alert_mutes (alert_group, flow, task, until, created_by, reason)
      values (${mute.group}, ${mute.flow ?? null}, ${mute.task ?? null},
        clock_timestamp() + make_interval(secs => ${mute.forMs / 1000}), ${mute.createdBy}, ${mute.reason ?? null})
      returning *`,
  );
  return muteOf(row!);
}

/** Mutes in force, ending soonest first; with `ended`, those that ended in the last 30 days too. */
export async function listAlertMutes(db: Db, opts: { ended?: boolean } = {}): Promise<AlertMute[]> {
  const found = await rows<MuteRow>(
    db,
    opts.ended
      ? // Those in force as without `ended` (ending soonest first), then the ended ones, latest first.
        sql`select * from alert_mutes
          order by until > clock_timestamp() desc, case when until > clock_timestamp() then until end, until desc, id desc`
      : sql`select * from alert_mutes where until > clock_timestamp() order by until, id`,
  );
  return found.map(muteOf);
}

/** Ends a mute now; undefined when no mute has that id or it had already ended. */
export async function endAlertMute(db: Db, id: number): Promise<AlertMute | undefined> {
  const [row] = await rows<MuteRow>(
    db,
    sql`update alert_mutes set until = clock_timestamp() where id = ${id} and until > clock_timestamp() returning *`,
  );
  return row && muteOf(row);
}

/**
 * The mute in force over an alert of `group` about `flow` (and `task`; empty for a run-level
 * alert, which only a mute without a task covers), if any.
 */
export async function mutingAlert(db: Db, group: string, flow: string, task: string): Promise<AlertMute | undefined> {
  const [row] = await rows<MuteRow>(
    db,
    sql`select * from alert_mutes
      where alert_group = ${group} and until > clock_timestamp()
        and (flow is null or flow = ${flow}) and (task is null or task = ${task})
      order by until desc limit 1`,
  );
  return row && muteOf(row);
}
