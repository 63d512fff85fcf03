import { AxAlertGroupNotFoundError, AxAlertMuteNotFoundError } from "@ax/common";
import { endAlertMute, insertAlertMute, latestConfigVersion, type AlertMute, type Db, type NewAlertMute } from "@ax/store";

/**
 * Mutes the alerts of a group the config in force defines (a mute of a misspelt group would
 * mute nothing and look like it worked), cluster-wide, for `forMs`.
 */
export async function muteAlerts(db: Db, request: NewAlertMute): Promise<AlertMute> {
  const current = await latestConfigVersion(db);
  const groups = Object.keys((current?.parsed as { alerts?: Record<string, unknown> } | undefined)?.alerts ?? {});
  if (!groups.includes(request.group)) throw new AxAlertGroupNotFoundError(request.group, groups);
  return insertAlertMute(db, request);
}

/** Ends a mute in force now; throws AxAlertMuteNotFoundError for an unknown or ended one. */
export async function unmuteAlerts(db: Db, id: number): Promise<AlertMute> {
  const ended = await endAlertMute(db, id);
  if (!ended) throw new AxAlertMuteNotFoundError(id);
  return ended;
}
