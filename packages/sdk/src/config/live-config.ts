import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { closeRedis, markConfigVersion, RepeatedErrors, subscribeTo, type DeliveryResult } from "@ax/coordinator";
import {
  getConfigVersion,
  insertConfigVersion,
  insertConfigVersionAfter,
  latestConfigVersion,
  latestConfigVersionNumber,
  currentFlowVersion,
  listCodeOptions,
  listConfigVersions,
  listFlowNames,
  listRetiredFlows,
  listClusterProcesses,
  previousConfigVersion,
  servedQueues,
  type ConfigVersion,
  type Db,
  type Json,
  type ProcessConfigState,
} from "@ax/store";
import { AxArgumentError, AxConfigConflictError, AxConfigError, AxConfigVersionNotFoundError, DEFAULT_LEASE_MS } from "@ax/common";
import { shown } from "../option-checks.js";
import { taskOverridesSchema, taskPoolOf, type TaskPool } from "../options.js";
import { sendTestAlert } from "./alerts-config.js";
import { redactConfigParsed, redactConfigYaml } from "./config-redaction.js";
import { changedLines, diffText } from "./config-diff.js";
import { applyMaskedEdit } from "./masked-edit.js";
import { effectiveConfig, type EffectiveConfig, type EffectiveFilter } from "./effective-config.js";
import { codeRetryPolicy, configWarnings } from "./config-warnings.js";
import { parseRuntimeConfig, type CodeRetryPolicy, type KnownNames, type RuntimeConfig } from "./runtime-config.js";

/** Where a new version's number is published; every Runtime of the prefix subscribes. */
export function configChannel(prefix: string): string {
  return `${prefix}:config`;
}

/** A stored version as the CLI and the API show it. */
export interface ConfigVersionInfo {
  version: number;
  author: string;
  file: string;
  createdAt: string;
  yaml: string;
  parsed: Json;
  /** Unified diff from the version before it (version 1: every line added). */
  diff: string;
}

export interface ShowOptions {
  redacted?: boolean | undefined;
}

export interface EditOptions {
  /**
   * The stored version the text is an edit of, as the API shows versions (secrets masked, comments
   * dropped; the console's editor): the edit's changes are made on that version's own text, which
   * keeps its comments and, for a masked value left as shown, its stored value. AxConfigConflictError
   * when another version has been stored since.
   */
  base?: number | undefined;
}

/**
 * A version just stored, with what may surprise in it: pools it leaves unsized, error lists the
 * code contradicts, queues no live worker serves.
 */
export interface ConfigApplied extends ConfigVersionInfo {
  warnings: string[];
  /** The text was the newest version's own: nothing was stored, and this is that version. */
  unchanged: boolean;
}

/** What `apply` would do with a file, nothing stored (`ax config check`). */
export interface ConfigCheck {
  /** The version in force, which the diff is taken from; null while none is stored. */
  inForce: number | null;
  /** The text is the version in force's own: apply would store nothing. */
  unchanged: boolean;
  /** Unified diff from the version in force to the file. */
  diff: string;
  warnings: string[];
}

export interface ConfigHistoryEntry {
  version: number;
  author: string;
  file: string;
  createdAt: string;
  /** Lines added and removed relative to the version before it. */
  added: number;
  removed: number;
}

const iso = (d: Date) => d.toISOString();

/** A text as `options` show it: with `redacted`, inline secrets, header values and webhook URLs masked. */
function shownText(options: ShowOptions) {
  return <T extends { yaml: string }>(row: T): T => (options.redacted ? { ...row, yaml: redactConfigYaml(row.yaml) } : row);
}

/**
 * `text`, an edit of version `base` as the API shows it, made on that version's stored text; `notes`
 * says when that could not be done and the edit is stored as written. AxConfigConflictError when
 * `base` is no longer the newest version.
 */
function editOf(latest: ConfigVersion | undefined, base: number, text: string): { yaml: string; notes: string[] } {
  if (latest?.version !== base) throw new AxConfigConflictError(base, latest?.version ?? 0);
  const merged = applyMaskedEdit(latest.yaml, text);
  if (merged !== undefined) return { yaml: merged, notes: [] };
  const note =
    `this edit could not be made on config v${base}'s stored text value by value (YAML anchors, aliases or keys that ` +
    `are not plain names keep it from that): it is stored as written, and v${base}'s comments are not kept`;
  return { yaml: text, notes: [note] };
}

/**
 * Stored configuration versions: validate, store and announce new ones, read them back, and tell
 * each option's effective value and source. The CLI, the API and `ax dev` all go through this.
 */
export class LiveConfig {
  constructor(
    private readonly db: Db,
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  /**
   * The tasks and flows of every flow's newest registered definition, and the pools tasks take in
   * the code the Runtimes registered (a config is checked against them, not only against itself).
   */
  async knownNames(): Promise<KnownNames> {
    const flows = await listFlowNames(this.db);
    const tasks = new Set<string>();
    for (const flow of flows) for (const node of (await currentFlowVersion(this.db, flow))?.dag.nodes ?? []) tasks.add(node.task);
    const taskPools: Record<string, TaskPool> = {};
    const taskRetries: Record<string, CodeRetryPolicy> = {};
    for (const row of await listCodeOptions(this.db)) {
      if (row.kind !== "task") continue;
      // Stored by whichever version of the code registered last: one this version cannot read is not checked.
      const pool = taskOverridesSchema.shape.pool.safeParse(row.options.pool);
      if (pool.success && pool.data !== undefined) taskPools[row.name] = taskPoolOf(pool.data);
      const retry = codeRetryPolicy(row.options);
      if (retry) taskRetries[row.name] = retry;
    }
    const retired = await listRetiredFlows(this.db);
    const retiredTasks = retired.flatMap((r) => r.tasks).filter((task) => !tasks.has(task));
    return { flows, tasks, taskPools, taskRetries, retired: { flows: retired.map((r) => r.flow), tasks: retiredTasks } };
  }

  /** Validates `text` against what the cluster knows; throws AxConfigError naming file, line, column and key. */
  async validate(text: string, file: string): Promise<RuntimeConfig> {
    mustBeStrings("config.validate(text, file)", { text, file });
    return parseRuntimeConfig(text, file, await this.knownNames());
  }

  /** Validates, stores as a new version and announces it; nothing is stored when it is invalid. */
  async apply(text: string, file: string, author: string, options: EditOptions = {}): Promise<ConfigApplied> {
    mustBeStrings("config.apply(text, file, author)", { text, file, author });
    const { yaml, parsed, latest, warnings } = await this.judge("config.apply", text, file, options.base);
    // The same text again (a save with no change, a rollback to the version in force) is no change to record or announce.
    if (latest?.yaml === yaml) return { ...(await this.version(latest.version)), warnings, unchanged: true };
    const row = { yaml, parsed: parsed as unknown as Json, author, file };
    const stored =
      options.base === undefined ? await insertConfigVersion(this.db, row) : await insertConfigVersionAfter(this.db, options.base, row);
    if (!stored) throw new AxConfigConflictError(options.base!, await latestConfigVersionNumber(this.db));
    await this.announce(stored.version);
    return { ...(await this.version(stored.version)), warnings, unchanged: false };
  }

  /**
   * What `apply` would do with `text`, storing and announcing nothing: it refuses what `apply`
   * refuses (AxConfigError naming file, line, column and key), and otherwise answers the diff from
   * the version in force and the warnings `apply` would give. For a pipeline that checks a change
   * before it is applied; the diff shows the texts as they are, secrets included, unless `redacted`
   * (what the HTTP API answers) masks them on both sides.
   */
  async check(text: string, file: string, options: ShowOptions & EditOptions = {}): Promise<ConfigCheck> {
    mustBeStrings("config.check(text, file)", { text, file });
    const { yaml, latest, warnings } = await this.judge("config.check", text, file, options.base);
    const shown = shownText(options);
    const diff = diffText(latest && shown(latest), shown({ file, yaml }));
    return { inForce: latest?.version ?? null, unchanged: latest?.yaml === yaml, diff, warnings };
  }

  /**
   * The text to store (`text`, or with `base` that version's own text with the edit's changes made
   * on it), validated against what the cluster knows (a refusal names its place in `text` as
   * written), the version in force, and what may surprise in it.
   */
  private async judge(method: string, text: string, file: string, base: number | undefined) {
    if (base !== undefined && (!Number.isInteger(base) || base < 1)) {
      throw new AxArgumentError(`${method}: options.base must be a stored version number (1 or more), got ${shown(base)}`);
    }
    const latest = await latestConfigVersion(this.db);
    const { yaml, notes } = base === undefined ? { yaml: text, notes: [] } : editOf(latest, base, text);
    const known = await this.knownNames();
    const parsed = parseRuntimeConfig(yaml, file, known, text);
    // The queues live workers serve now: a worker keeps those it started with whatever the new version says.
    const served = (await servedQueues(this.db, DEFAULT_LEASE_MS)).keys();
    return { yaml, parsed, latest, warnings: [...notes, ...configWarnings(parsed, known, served)] };
  }

  /** A new version whose text is `version`'s (re-validated: the cluster's flows may have changed since). */
  async rollback(version: number, author: string): Promise<ConfigApplied> {
    const old = await this.stored(version);
    return this.apply(old.yaml, old.file, author);
  }

  /** `redacted`: inline secrets, header values and webhook URLs masked, comments dropped (what the HTTP API shows). */
  async current(options: ShowOptions = {}): Promise<ConfigVersionInfo | undefined> {
    const latest = await latestConfigVersion(this.db);
    return latest && this.version(latest.version, options);
  }

  async version(version: number, options: ShowOptions = {}): Promise<ConfigVersionInfo> {
    const shown = shownText(options);
    const row = await this.stored(version);
    const previous = await previousConfigVersion(this.db, version);
    return {
      version: row.version,
      author: row.author,
      file: row.file,
      createdAt: iso(row.createdAt),
      yaml: shown(row).yaml,
      parsed: options.redacted ? (redactConfigParsed(row.parsed) as Json) : row.parsed,
      // Both sides masked, so no hunk carries a secret whatever its context lines.
      diff: diffText(previous && shown(previous), shown(row)),
    };
  }

  /** Newest first. */
  async history(limit = 50): Promise<ConfigHistoryEntry[]> {
    // One extra row: the oldest listed version's diff is taken against it.
    const rows = await listConfigVersions(this.db, limit + 1);
    return rows.slice(0, limit).map((row, i) => ({
      version: row.version,
      author: row.author,
      file: row.file,
      createdAt: iso(row.createdAt),
      ...changedLines(rows[i + 1]?.yaml ?? "", row.yaml),
    }));
  }

  /** Unified diff from version `a` to version `b`; `redacted` masks secrets on both sides. */
  async diff(a: number, b: number, options: ShowOptions = {}): Promise<string> {
    const shown = shownText(options);
    return diffText(shown(await this.stored(a)), shown(await this.stored(b)));
  }

  /**
   * Every process (workers, coordinators, API processes) with the version it last reported; `live`
   * when that was under `liveMs` ago.
   */
  async cluster(liveMs = 10_000): Promise<ProcessConfigState[]> {
    return listClusterProcesses(this.db, liveMs);
  }

  /**
   * The effective value of every option and its source: `yaml vN` (the stored version in force),
   * `code` (as the Runtimes registered it) or `default`. `task`/`flow` narrow it to one of them.
   */
  async effective(filter: EffectiveFilter = {}): Promise<EffectiveConfig> {
    return effectiveConfig(this.db, filter);
  }

  /**
   * Sends a `test` alert through every sink of `group` of the version in force (`ax alerts test`,
   * `POST /api/alerts/test`), bypassing triggers and silence windows; answers each sink's outcome.
   * AxAlertGroupNotFoundError when that version defines no such group.
   */
  async testAlert(group: string, log: Logger): Promise<DeliveryResult[]> {
    mustBeStrings("config.testAlert(group, log)", { group });
    const latest = await latestConfigVersion(this.db);
    const config = parseRuntimeConfig(latest?.yaml ?? "", latest ? `${latest.file} (config v${latest.version})` : "(no stored config)");
    return sendTestAlert(config, group, log);
  }

  /** Tells every Runtime of the prefix to apply `version` now, rather than at its next poll. */
  async announce(version: number): Promise<void> {
    await markConfigVersion(this.redis, this.prefix, version);
    await this.redis.publish(configChannel(this.prefix), String(version));
  }

  private async stored(version: number): Promise<ConfigVersion> {
    const row = await getConfigVersion(this.db, version);
    if (!row) throw new AxConfigVersionNotFoundError(version, await latestConfigVersionNumber(this.db));
    return row;
  }
}

export interface ConfigFollowerOptions {
  db: Db;
  redis: Redis;
  prefix: string;
  log: Logger;
  /** The version applied now (0: none). */
  applied: () => number;
  /** Applies a newer stored version; a throw leaves the previous one in force. */
  apply: (version: ConfigVersion) => Promise<void>;
  /** The safety net for a missed message (Redis down, subscribed late). @defaultValue 2000 */
  pollMs?: number | undefined;
}

/**
 * Keeps a Runtime on the newest stored version: a Redis message applies it at once, and a poll
 * of `max(version)` catches any message missed. Checks never overlap; one asked for while
 * another runs follows it.
 */
export class ConfigFollower {
  private subscriber: Redis | undefined;
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;
  private again = false;
  /** A version this process could not apply: not retried at every poll, only when a newer one comes. */
  private refused = 0;

  private readonly errors: RepeatedErrors;

  constructor(private readonly options: ConfigFollowerOptions) {
    this.errors = new RepeatedErrors(options.log);
  }

  async start(): Promise<void> {
    const o = this.options;
    this.subscriber = await subscribeTo(o.redis, o.log, "config subscriber", configChannel(o.prefix), () => this.check());
    this.timer = setInterval(() => this.check(), o.pollMs ?? 2000);
    this.timer.unref();
    // A version stored between this Runtime's start-up read and the subscription.
    this.check();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    if (this.subscriber) closeRedis(this.subscriber);
    this.subscriber = undefined;
    await this.checking;
  }

  /** Looks for a newer version now, and resolves once this check (and any asked for meanwhile) is done. */
  async catchUp(): Promise<void> {
    if (!this.subscriber) return;
    this.check();
    while (this.checking) await this.checking;
  }

  private check(): void {
    if (this.checking) {
      this.again = true;
      return;
    }
    this.checking = this.follow()
      .catch((err) => this.errors.warn(err, {}, "could not look for a new config version; will retry"))
      .finally(() => {
        this.checking = undefined;
        if (this.again && this.subscriber) {
          this.again = false;
          this.check();
        }
      });
  }

  private async follow(): Promise<void> {
    const o = this.options;
    const newest = await latestConfigVersionNumber(o.db);
    if (newest <= o.applied() || newest <= this.refused) return;
    const version = await getConfigVersion(o.db, newest);
    if (!version) return;
    try {
      await o.apply(version);
    } catch (err) {
      // A version this process cannot parse stays refused; a failed write is tried again at the next poll.
      if (err instanceof AxConfigError) this.refused = newest;
      o.log.error({ err, version: newest }, "could not apply config version; the previous one stays in force");
    }
  }
}

/** JavaScript callers get a refusal naming the argument, not a TypeError from inside the YAML parser. */
function mustBeStrings(method: string, args: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(args)) {
    if (typeof value !== "string") throw new AxArgumentError(`${method}: ${name} must be a string, got ${shown(value)}`);
  }
}
