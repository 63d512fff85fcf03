import type { Logger } from "pino";
import type { Counter } from "prom-client";
import { claimAlert, logAlert, mutingAlert, type AlertClaim, type AlertKey, type Db, type Json } from "@ax/store";
import { deliverAlert, type DeliveryResult } from "./sinks.js";
import { newAlert, type Alert, type AlertFields, type AlertGroup, type AlertKind } from "./types.js";

/** What a trigger says of its alert; the sender fills in the group and the count held back. */
export type TriggerFields = Omit<AlertFields, "kind" | "group" | "suppressed">;

export interface AlertSenderOptions {
  db: Db;
  log: Logger;
  /** `ax_alert_deliveries_total`: each sink's answer, and the alerts silenced or muted. */
  deliveries: Counter<"sink" | "outcome">;
}

/**
 * Whether an alert may go (its silence window, cluster-wide; an operator's mute) and its delivery
 * to the group's sinks, kept in the alert history. Deliveries run in the background: a webhook
 * retrying with backoff must not hold up the evaluation of later events.
 */
export class AlertSender {
  private readonly sending = new Set<Promise<unknown>>();

  constructor(private readonly o: AlertSenderOptions) {}

  /**
   * Sends unless the key is within its silence window (cluster-wide); true when sent. A `repeat`
   * held back by the window is not counted as silenced: it is the alert already sent, found again.
   */
  async raise(
    name: string,
    group: AlertGroup,
    key: Omit<AlertKey, "group">,
    alert: TriggerFields,
    opts: { since?: Date } = {},
  ): Promise<boolean> {
    // Checked before the claim: an alert muted does not open a silence window that outlives the mute.
    if (await this.muted(name, key.flow, key.task)) return false;
    const claim = await this.claim(name, group, key, opts);
    if (!claim.send) return false;
    this.send(name, group, { ...alert, kind: key.kind as AlertKind, task: key.task || null }, claim.suppressed);
    return true;
  }

  /** The right to send `key`'s alert in `group`'s silence window; one held back is counted as silenced. */
  async claim(name: string, group: AlertGroup, key: Omit<AlertKey, "group">, opts: { since?: Date } = {}): Promise<AlertClaim> {
    const claim = await claimAlert(this.o.db, { ...key, group: name }, group.silenceMs, opts);
    if (!claim.send && claim.held) this.o.deliveries.inc({ sink: "-", outcome: "silenced" });
    return claim;
  }

  /** Whether an operator muted this group's alerts for the flow and task now. */
  async muted(group: string, flow: string, task: string): Promise<boolean> {
    const mute = await mutingAlert(this.o.db, group, flow, task);
    if (!mute) return false;
    this.o.deliveries.inc({ sink: "-", outcome: "muted" });
    this.o.log.debug({ group, flow, task, mute: mute.id }, `alert muted by mute ${mute.id} until ${mute.until.toISOString()}`);
    return true;
  }

  send(name: string, group: AlertGroup, fields: TriggerFields & { kind: AlertKind }, suppressed = 0): void {
    const alert = newAlert({ ...fields, group: name, suppressed });
    const sending = deliverAlert(alert, group.sinks, this.o.log, { deliveries: this.o.deliveries })
      .then((results) => this.keep(alert, results))
      .finally(() => this.sending.delete(sending));
    this.sending.add(sending);
  }

  /** Resolves once every delivery under way has ended. */
  async drain(): Promise<void> {
    await Promise.all(this.sending);
  }

  /** The history an operator reads (`GET /api/alerts`, the console); losing an entry loses no alert. */
  private async keep(alert: Alert, results: DeliveryResult[]): Promise<void> {
    try {
      await logAlert(this.o.db, { alert: alert as unknown as Json, deliveries: results as unknown as Json });
    } catch (err) {
      this.o.log.warn({ err, alert: { kind: alert.kind, flow: alert.flow } }, "could not keep the sent alert in its history");
    }
  }
}
