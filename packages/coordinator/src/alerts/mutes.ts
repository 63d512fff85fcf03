import { AxAlertGroupNotFoundError, AxAlertMuteNotFoundError, AxAlertMuteTargetError } from "@ax/common";
import {
  currentFlowVersion,
  endAlertMute,
  insertAlertMute,
  latestConfigVersion,
  listFlowNames,
  type AlertMute,
  type Db,
  type NewAlertMute,
} from "@ax/store";

/**
 * Mutes the alerts of a group the config in force defines, narrowed to a registered flow and
 * task when given (a mute of a misspelt name would mute nothing and look like it worked),
 * cluster-wide, for `forMs`.
 */
export async function muteAlerts(db: Db, request: NewAlertMute): Promise<AlertMute> {
  const current = await latestConfigVersion(db);
  const groups = Object.keys((current?.parsed as { alerts?: Record<string, unknown> } | undefined)?.alerts ?? {});
  if (!groups.includes(request.group)) throw new AxAlertGroupNotFoundError(request.group, groups);
  if (request.flow !== undefined || request.task !== undefined) {
    const flows = await listFlowNames(db);
    if (request.flow !== undefined && !flows.includes(request.flow)) throw new AxAlertMuteTargetError("flow", request.flow, flows);
    if (request.task !== undefined) {
      const tasks = new Set<string>();
      for (const flow of request.flow !== undefined ? [request.flow] : flows) {
        for (const node of (await currentFlowVersion(db, flow))?.dag.nodes ?? []) tasks.add(node.task);
      }
      if (!tasks.has(request.task)) throw new AxAlertMuteTargetError("task", request.task, [...tasks]);
    }
  }
  return insertAlertMute(db, request);
}

/** Ends a mute in force now; throws AxAlertMuteNotFoundError for an unknown or ended one. */
export async function unmuteAlerts(db: Db, id: number): Promise<AlertMute> {
  const ended = await endAlertMute(db, id);
  if (!ended) throw new AxAlertMuteNotFoundError(id);
  return ended;
}
