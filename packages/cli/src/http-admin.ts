import type { AlertMute, AuditEntry, Duration, LoggedAlert, PruneCounts, PruneRequest, PruneResult } from "ax-scheduler";
import type { DataDirHolder } from "@ax/common";
import type { AdminApi } from "./admin-api.js";
import { apiRequest, queryString as query, type ApiRequest, type Json } from "./api-request.js";

const muteOf = (m: Json<AlertMute>): AlertMute => ({ ...m, until: new Date(m.until), createdAt: new Date(m.createdAt) });

/**
 * The audit log, pruning, and the alerts' history and mutes through the HTTP API of the `ax dev` that holds
 * an embedded data directory. Changes made this way are recorded as that API records them (the
 * token's name, or `anonymous` without auth), not as `cli:<os user>`.
 */
export class HttpAdminApi implements AdminApi {
  private readonly request: ApiRequest;

  constructor(holder: DataDirHolder & { api: string }) {
    this.request = apiRequest(holder);
  }

  async audit(filter: { limit?: number; before?: number; action?: string; actor?: string } = {}): Promise<AuditEntry[]> {
    const { entries } = await this.request<{ entries: Json<AuditEntry>[] }>("GET", `/api/audit${query(filter)}`);
    return entries.map((e) => ({ ...e, at: new Date(e.at) }) as AuditEntry);
  }

  async listAlerts(options: { limit?: number; before?: number } = {}): Promise<LoggedAlert[]> {
    const { alerts } = await this.request<{ alerts: LoggedAlert[] }>("GET", `/api/alerts${query(options)}`);
    return alerts;
  }

  async listAlertMutes(options: { ended?: boolean } = {}): Promise<AlertMute[]> {
    const { mutes } = await this.request<{ mutes: Json<AlertMute>[] }>(
      "GET",
      `/api/alerts/mutes${query({ ended: options.ended || undefined })}`,
    );
    return mutes.map(muteOf);
  }

  async muteAlerts(options: { group: string; flow?: string; task?: string; for: Duration; reason?: string }): Promise<AlertMute> {
    return muteOf(await this.request<Json<AlertMute>>("POST", "/api/alerts/mutes", options));
  }

  async unmuteAlerts(id: number): Promise<AlertMute> {
    return muteOf(await this.request<Json<AlertMute>>("DELETE", `/api/alerts/mutes/${id}`));
  }

  /**
   * The API has no progress to report: `onProgress` is never called. Aborting `signal` (Ctrl-C)
   * closes the connection, which stops the prune after its current batch, and throws its reason.
   */
  async prune(options: PruneRequest): Promise<PruneResult | (PruneCounts & { dryRun: true })> {
    const { olderThan, archive, dryRun, batch, signal } = options;
    return this.request("POST", "/api/history/prune", { olderThan: String(olderThan), archive, dryRun, batch }, { signal, timeout: false });
  }
}
