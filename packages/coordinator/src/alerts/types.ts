/** Where an alert goes. Durations are milliseconds. */
export type AlertSink =
  | {
      type: "webhook";
      url: string;
      /** HMAC-SHA256 key of the `X-Ax-Signature` header; unsigned without one. */
      secret?: string | undefined;
      /** The `secret_env` variable this process does not set: deliveries fail instead of going unsigned. */
      unsetSecretEnv?: string | undefined;
      timeoutMs: number;
      /** Extra tries after the first failure, `retryBackoffMs`, 2x, 4x … apart. */
      retries: number;
      retryBackoffMs: number;
      headers?: Record<string, string> | undefined;
    }
  | { type: "log"; level: "info" | "warn" | "error" };

/** One `alerts:` group as validated (runtime.yaml). */
export interface AlertGroup {
  sinks: AlertSink[];
  /** After an alert, the same key (kind, flow, task, error fingerprint) stays quiet this long. */
  silenceMs: number;
  triggers: {
    /** A task failed with no retries left. */
    terminalFailure: boolean;
    /** This many terminal failures of a task in a row (each a run) raise their own alert. */
    consecutiveFailures?: number | undefined;
    /** A run that finished (even successfully) after running longer than this. */
    slowRunMs?: number | undefined;
    /** A run still `running` after this long. */
    stuckRunningMs?: number | undefined;
    /** The first success of a task after an alert about it. */
    recovery: boolean;
  };
  /** Run-level triggers (slow, stuck) watch these flows; `default` watches every flow no group lists. */
  flows?: string[] | undefined;
}

export type AlertKind = "task_failed" | "consecutive_failures" | "slow_run" | "stuck_running" | "recovered" | "test";

/** The JSON a webhook receives (and the log sink writes). */
export interface Alert {
  kind: AlertKind;
  group: string;
  /** One line for humans: what happened and where. */
  summary: string;
  flow: string;
  task: string | null;
  runId: string | null;
  nodeKey: string | null;
  attempt: number | null;
  businessKey: string | null;
  error: { name: string; message: string } | null;
  /** Error name + normalised message: alerts with the same one are the same problem. */
  fingerprint: string | null;
  /** Alerts of this key held back by the silence window since the previous one sent. */
  suppressed: number;
  /** Kind-specific figures: `failures`, `durationMs`, `thresholdMs`, `runs`. */
  details: Record<string, unknown>;
  /** The event that raised it (stream id), when one did. */
  eventId: string | null;
  at: string;
}

/** What a trigger says of its alert; `newAlert` fills in the rest. */
export type AlertFields = Partial<Omit<Alert, "kind" | "group" | "summary" | "flow" | "details" | "at">> &
  Pick<Alert, "kind" | "group" | "summary" | "flow" | "details">;

/** An alert stamped now, every field its trigger leaves out empty (nothing held back before it). */
export function newAlert(fields: AlertFields): Alert {
  return {
    task: null,
    runId: null,
    nodeKey: null,
    attempt: null,
    businessKey: null,
    error: null,
    fingerprint: null,
    eventId: null,
    suppressed: 0,
    ...fields,
    at: new Date().toISOString(),
  };
}

/** The group a task without `alertGroup` reports to, and that watches flows no group lists. */
export const DEFAULT_ALERT_GROUP = "default";
