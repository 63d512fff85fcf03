import { createHmac } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import type { Counter } from "prom-client";
import { AxAlertDeliveryError, AxAlertSecretUnsetError, redactUrl } from "@ax/common";
import type { Alert, AlertSink } from "./types.js";

export const SIGNATURE_HEADER = "X-Ax-Signature";

/** `sha256=<hex>`: HMAC-SHA256 of the exact body bytes with the sink's secret. */
export function signBody(body: string, secret: string): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

export interface DeliveryResult {
  sink: AlertSink["type"];
  target: string;
  ok: boolean;
  error?: string;
}

export interface DeliveryOptions {
  deliveries?: Counter<"sink" | "outcome">;
  /** The caller shows each result itself (`ax alerts test`): a failure is not logged as well. */
  resultsShown?: boolean;
}

/** Sends `alert` to every sink of its group; one sink's failure does not stop the others. */
export async function deliverAlert(
  alert: Alert,
  sinks: AlertSink[],
  log: Logger,
  options: DeliveryOptions = {},
): Promise<DeliveryResult[]> {
  const { deliveries } = options;
  return Promise.all(
    sinks.map(async (sink): Promise<DeliveryResult> => {
      // What read tokens, the console and the logs see: the URL's path and credentials are often the secret.
      const target = sink.type === "webhook" ? redactUrl(sink.url) : "log";
      try {
        if (sink.type === "webhook") await postWebhook(alert, sink);
        else log[sink.level]({ alert }, `alert: ${alert.summary}`);
        deliveries?.inc({ sink: sink.type, outcome: "sent" });
        return { sink: sink.type, target, ok: true };
      } catch (error) {
        deliveries?.inc({ sink: sink.type, outcome: "failed" });
        if (!options.resultsShown)
          log.error({ err: error, alert: { kind: alert.kind, flow: alert.flow, task: alert.task } }, "alert not delivered");
        return { sink: sink.type, target, ok: false, error: (error as Error).message };
      }
    }),
  );
}

async function postWebhook(alert: Alert, sink: Extract<AlertSink, { type: "webhook" }>): Promise<void> {
  if (sink.unsetSecretEnv) throw new AxAlertSecretUnsetError(redactUrl(sink.url), sink.unsetSecretEnv);
  const body = JSON.stringify(alert);
  const { url, authorization } = withoutCredentials(sink.url);
  const headers: Record<string, string> = { ...sink.headers, "content-type": "application/json", "user-agent": "ax-scheduler" };
  if (authorization && !Object.keys(headers).some((name) => name.toLowerCase() === "authorization")) headers.authorization = authorization;
  if (sink.secret) headers[SIGNATURE_HEADER] = signBody(body, sink.secret);
  const shown = redactUrl(sink.url);
  let reason = "";
  for (let attempt = 0; attempt <= sink.retries; attempt++) {
    if (attempt > 0) await sleep(sink.retryBackoffMs * 2 ** (attempt - 1));
    try {
      // Not followed: fetch would send a 301/302's POST on as a GET without the alert, whose 2xx
      // would count as sent, and a 307/308's body, secret headers included, wherever it points.
      const response = await fetch(url, { method: "POST", headers, body, redirect: "manual", signal: AbortSignal.timeout(sink.timeoutMs) });
      await response.arrayBuffer().catch(() => undefined);
      if (response.ok) return;
      const location = response.status >= 300 && response.status < 400 ? response.headers.get("location") : null;
      reason = location
        ? `HTTP ${response.status}, a redirect to ${redactUrl(new URL(location, url).href)}: set the sink's url to where it points`
        : `HTTP ${response.status}`;
      // A 4xx other than 408/429 will not get better by asking again.
      if (response.status < 500 && response.status !== 408 && response.status !== 429) {
        throw new AxAlertDeliveryError(shown, attempt + 1, reason);
      }
    } catch (error) {
      if (error instanceof AxAlertDeliveryError) throw error;
      reason = (error as Error).name === "TimeoutError" ? `no answer within ${sink.timeoutMs} ms` : networkReason(error as Error);
    }
  }
  throw new AxAlertDeliveryError(shown, sink.retries + 1, reason);
}

/**
 * fetch refuses a URL with credentials (`https://user:pass@host/hook`): they go as HTTP Basic
 * authorization instead, unless the sink's own headers carry one.
 */
function withoutCredentials(text: string): { url: string; authorization?: string } {
  const url = new URL(text);
  if (!url.username && !url.password) return { url: text };
  const basic = Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString("base64");
  url.username = "";
  url.password = "";
  return { url: url.href, authorization: `Basic ${basic}` };
}

/** fetch says only "fetch failed"; what failed (`connect ECONNREFUSED …`, `getaddrinfo ENOTFOUND …`) is its cause. */
function networkReason(error: Error): string {
  const cause = error.cause instanceof Error ? error.cause.message : undefined;
  return cause ? `${error.message}: ${cause}` : error.message;
}
