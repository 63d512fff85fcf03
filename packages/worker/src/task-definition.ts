export type ErrorMatcher = string | (abstract new (...args: never[]) => Error);

import type { KeyStrategy } from "@ax/common";

export { KEY_STRATEGIES, type KeyStrategy } from "@ax/common";

/** A limit counted per business key: `key` reads the key off the task's arguments. */
export interface KeyedLimit {
  key: (args: unknown[]) => string;
  /** How the key was given, for `ax config show`: the YAML path, or "function". */
  keySource: string;
}

/** Task options after defaults and YAML overrides; durations in milliseconds. */
export interface ResolvedTaskOptions {
  name: string;
  retries: number;
  retryBackoffMs: number;
  backoff: "exponential" | "fixed";
  jitter: number;
  maxBackoffMs: number;
  retryOn: ErrorMatcher[] | null;
  noRetryOn: ErrorMatcher[];
  timeoutMs: number | null;
  heartbeatTimeoutMs: number | null;
  onFailure: "fail" | "notify_only";
  /** Attempts at once across the cluster, task-wide (a plain number). */
  concurrency: number | null;
  rateLimit: { max: number; perMs: number } | null;
  /** `concurrency: { max, key, strategy }`: attempts at once per key. */
  concurrencyKey: (KeyedLimit & { max: number; strategy: KeyStrategy }) | null;
  /** `rateLimit: { max, per, key }`: starts per window per key. */
  rateLimitKey: (KeyedLimit & { max: number; perMs: number }) | null;
  pool: { name: string; slots: number } | null;
  queue: string;
  executor: "inline" | "thread" | "process";
  resources: { memoryMb?: number | undefined; cpuSeconds?: number | undefined } | null;
  maxResultBytes: number;
  alertGroup: string | null;
}

/** What a worker needs of a task: its function and its effective options. */
export interface RunnableTask {
  name: string;
  fn: (...args: never[]) => unknown;
  options: ResolvedTaskOptions;
  /** The module whose `ax.task()` call defined it: the thread and process executors import it in their child. */
  moduleUrl?: string | undefined;
}

export interface TaskSource {
  get(name: string): RunnableTask | undefined;
  /** Every task this process defines. */
  names(): string[];
}
