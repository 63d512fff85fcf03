import { readFileSync } from "node:fs";
import type { Alias } from "yaml";
import { yaml } from "./yaml-lazy.js";
import { z } from "zod";
import { durationMs } from "../duration.js";
import { flowYamlOverridesSchema, type FlowYamlOverrides } from "../flow-options.js";
import { atLeastOne, matcherName, taskPoolOf, taskYamlOverridesSchema, type TaskPool, type TaskYamlOverrides } from "../options.js";
import { alertsSchema, type AlertsConfig } from "./alerts-config.js";
import { optionKeys, snake, yamlPath, type YamlPath } from "./yaml-keys.js";
import { AxConfigError, plainMessage, REDACTED } from "@ax/common";

/** Pruning history younger than an hour would delete runs people are still looking at. */
const MIN_RETENTION_MS = 3_600_000;

/** `retention: 90d`: how long finished runs are kept, a duration (a number is seconds). */
export const retentionMs = durationMs.refine((ms) => ms >= MIN_RETENTION_MS, {
  message: 'must be at least 1h (write a duration such as "90d", "30d" or "12h")',
});

const configSchema = z
  .object({
    maxConcurrency: atLeastOne("a whole number of attempts, at least 1").optional(),
    pools: z.record(z.string(), atLeastOne("a whole number of slots, at least 1")).optional(),
    tasks: z.record(z.string(), taskYamlOverridesSchema).optional(),
    flows: z.record(z.string(), flowYamlOverridesSchema).optional(),
    retention: retentionMs.optional(),
    alerts: alertsSchema.optional(),
  })
  .strict();

export interface RuntimeConfig {
  maxConcurrency?: number | undefined;
  pools: Record<string, number>;
  /** `null`: the option removed, whatever the code sets. */
  tasks: Record<string, TaskYamlOverrides>;
  /** `null`: the option removed, whatever the code sets. */
  flows: Record<string, FlowYamlOverrides>;
  /** `alerts:` groups by name (durations in ms; `secret_env` not yet read). */
  alerts: AlertsConfig;
  /** `retention`, ms; unset: DEFAULT_RETENTION_MS (90 days). */
  retentionMs?: number | undefined;
}

/** The tasks and flows the cluster knows (registered flow definitions), what YAML may name. */
export interface KnownNames {
  tasks: Iterable<string>;
  flows: Iterable<string>;
  /**
   * The pool each task takes as its code sets it, by task name: checked against the sizes under
   * `pools:` unless the YAML gives the task a pool of its own.
   */
  taskPools?: Record<string, TaskPool> | undefined;
  /** Each task's retry options as its code sets them, by task name: a YAML list replacing one of them may contradict the other. */
  taskRetries?: Record<string, CodeRetryPolicy> | undefined;
  /** Flows retired with `ax flow retire`, and the tasks only they ran: named, they are refused saying so. */
  retired?: { flows: Iterable<string>; tasks: Iterable<string> } | undefined;
}

/** A task's retry options as its code set them when a Runtime registered it (error classes by name). */
export interface CodeRetryPolicy {
  retries?: number | undefined;
  retryOn?: string[] | undefined;
  noRetryOn?: string[] | undefined;
}

/**
 * Pools the code gives tasks that `config` leaves unsized, one sentence each: not an error (sizing
 * a new pool is how it comes into use), but a version dropping a size holds those tasks' attempts
 * back until one sizes it again, which whoever applies it should hear.
 */
export function unsizedPools(config: RuntimeConfig, known: KnownNames): string[] {
  const byPool = new Map<string, string[]>();
  for (const [task, pool] of Object.entries(known.taskPools ?? {})) {
    if (config.tasks[task]?.pool !== undefined || config.pools[pool.name] !== undefined) continue;
    byPool.set(pool.name, [...(byPool.get(pool.name) ?? []), task]);
  }
  return [...byPool].map(
    ([pool, tasks]) =>
      `pool "${pool}" is not sized here: ${tasks.length === 1 ? "task" : "tasks"} ${tasks.sort().join(", ")} ${tasks.length === 1 ? "takes" : "take"} it in code and will not start until a version sizes it (pools: { ${pool}: <slots> })`,
  );
}

/** Why a pool of `size` can never start a task taking `pool.slots` of it, and what to change. */
function poolTooSmall(task: string, pool: TaskPool, size: number, where: "code" | "yaml"): string {
  const slots =
    where === "code"
      ? `give the task at most ${size} (tasks.${task}.pool: { name: ${pool.name}, slots: ${size} })`
      : `tasks.${task}.pool.slots at most ${size}`;
  return `task "${task}" takes ${pool.slots} slots of pool "${pool.name}"${where === "code" ? " (in its code)" : ""} but the pool has ${size}, so it could never start; make pools.${pool.name} at least ${pool.slots}, or ${slots}`;
}

export function readConfigFile(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    throw new AxConfigError(`cannot read config file ${file}: ${(error as Error).message}`, file);
  }
}

/**
 * Reads and validates `runtime.yaml`. Every problem is reported with file, line, column and key,
 * and nothing is applied unless the whole file is valid.
 */
export function loadRuntimeConfig(file: string, known?: KnownNames): RuntimeConfig {
  return parseRuntimeConfig(readConfigFile(file), file, known);
}

/**
 * Parses and validates `runtime.yaml` text. With `known` (the tasks and flows the cluster has
 * registered) a name it lacks is refused too. The error names file, line, column and key, and
 * says what is expected there: in `written` when given, the text as its author wrote it, of which
 * `text` is a rewrite with the same keys (an edit made on a stored version's masked text).
 */
export function parseRuntimeConfig(text: string, file: string, known?: KnownNames, written = text): RuntimeConfig {
  const { isMap, isNode, isScalar, LineCounter, parseDocument, visit } = yaml();
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines });
  const writtenLines = written === text ? lines : new LineCounter();
  const writtenDoc = written === text ? doc : parseDocument(written, { lineCounter: writtenLines });
  const positionOf = (path: YamlPath): { line: number; col: number } | undefined => {
    for (let depth = path.length; depth >= 0; depth--) {
      const node = writtenDoc.getIn(path.slice(0, depth), true);
      if (isNode(node) && node.range) return writtenLines.linePos(node.range[0]);
    }
    return undefined;
  };
  /** The key's own position when it is a mapping key (an unknown key has no value node worth pointing at). */
  const keyPositionOf = (path: YamlPath): { line: number; col: number } | undefined => {
    const parent = path.length > 1 ? writtenDoc.getIn(path.slice(0, -1), true) : writtenDoc.contents;
    if (isMap(parent)) {
      const pair = parent.items.find((p) => isScalar(p.key) && p.key.value === path[path.length - 1]);
      if (pair && isNode(pair.key) && pair.key.range) return writtenLines.linePos(pair.key.range[0]);
    }
    return positionOf(path);
  };
  const problems: { path: YamlPath; message: string }[] = [];
  const fail = (path: YamlPath, message: string): void => {
    problems.push({ path, message });
  };
  /**
   * Every problem found, one per line in the file's order of lines (the checks find them in their
   * own), the first one's place on the error: a file is fixed in one pass, top to bottom.
   */
  const refuseProblems = (): void => {
    if (problems.length === 0) return;
    const described = problems
      .map(({ path, message }) => {
        const at = keyPositionOf(path);
        const key = path.join(".");
        // A problem of a key the file does not have (one it misspelt, one missing) is placed at an
        // enclosing key; it sorts after the problems the file shows where they are.
        const line = writtenDoc.hasIn(path) ? (at?.line ?? Infinity) : Infinity;
        return { at, key, line, text: `${file}${at ? `:${at.line}:${at.col}` : ""}: ${key ? `${key}: ` : ""}${message}` };
      })
      // By line only: on one line an unknown key stays ahead of the value it leaves missing.
      .sort((a, b) => a.line - b.line);
    const first = described[0]!;
    throw new AxConfigError(described.map((d) => d.text).join("\n"), file, first.at?.line, first.key || undefined, first.at?.col);
  };
  if (doc.errors.length > 0) {
    const first = doc.errors[0]!;
    const at = first.linePos?.[0];
    // yaml's own advice here names one of its functions: the reader can only change the file.
    const message =
      first.code === "MULTIPLE_DOCS"
        ? "the file holds more than one YAML document (a `---` line after content); runtime.yaml is one document: remove the `---` and merge the parts"
        : `YAML syntax: ${first.message}`;
    throw new AxConfigError(`${file}:${at ? `${at.line}:${at.col}` : "?"}: ${message}`, file, at?.line, undefined, at?.col);
  }
  let raw: unknown;
  try {
    raw = doc.toJS() ?? {};
  } catch (error) {
    // Aliases are resolved only here: one used before its anchor, or expanding past yaml's cap.
    let unresolved: Alias | undefined;
    visit(doc, {
      Alias(_key, alias) {
        if (alias.resolve(doc) !== undefined) return undefined;
        unresolved = alias;
        return visit.BREAK;
      },
    });
    const at = unresolved?.range ? lines.linePos(unresolved.range[0]) : undefined;
    throw new AxConfigError(
      `${file}${at ? `:${at.line}:${at.col}` : ""}: YAML: ${(error as Error).message}. Write the value out instead of using that alias.`,
      file,
      at?.line,
      undefined,
      at?.col,
    );
  }
  const parsed = configSchema.safeParse(optionKeys(raw, configSchema, fail));
  for (const issue of parsed.error?.issues ?? []) {
    const path = yamlPath(raw, issue.path);
    fail(path, withNullHint(path, valueAt(raw, path), plainMessage(issue.message)));
  }
  // Names are checked on the file as written when a value is wrong too: every problem in one pass.
  if (known) {
    checkNames(parsed.success ? parsed.data : raw, known, fail);
    checkMasked(raw, fail);
  }
  if (!parsed.success) refuseProblems();
  const config = parsed.data!;
  for (const [name, task] of Object.entries(config.tasks ?? {})) {
    const both = (task.noRetryOn ?? []).map(matcherName).find((m) => (task.retryOn ?? []).map(matcherName).includes(m));
    if (both)
      fail(
        ["tasks", name, "no_retry_on"],
        `${both} is in both retry_on and no_retry_on; no_retry_on would win, so remove it from one of them`,
      );
  }
  const pools = config.pools ?? {};
  for (const [name, task] of Object.entries(config.tasks ?? {})) {
    if (task.pool === undefined || task.pool === null) continue;
    const pool = taskPoolOf(task.pool);
    const size = pools[pool.name];
    if (size === undefined) fail(["tasks", name, "pool"], `pool "${pool.name}" is not defined under pools:`);
    else if (pool.slots > size) fail(["tasks", name, "pool", "slots"], poolTooSmall(name, pool, size, "yaml"));
  }
  // A pool the code names but the file leaves unsized is not refused: the task waits saying so, and
  // sizing it is how a new deploy's pool comes into use. One sized too small could never start.
  for (const name of known?.tasks ?? []) {
    const pool = known?.taskPools?.[name];
    const size = pool && pools[pool.name];
    if (pool && size !== undefined && pool.slots > size && config.tasks?.[name]?.pool === undefined) {
      fail(["pools", pool.name], poolTooSmall(name, pool, size, "code"));
    }
  }
  refuseProblems();
  return {
    maxConcurrency: config.maxConcurrency,
    pools: config.pools ?? {},
    tasks: config.tasks ?? {},
    flows: config.flows ?? {},
    alerts: config.alerts ?? {},
    retentionMs: config.retention,
  };
}

/** The options YAML may remove with `null`, as written there. */
const removable = (shape: Record<string, z.ZodType>) =>
  Object.entries(shape)
    .filter(([, schema]) => schema.safeParse(null).success)
    .map(([option]) => snake(option));
const REMOVABLE = { tasks: removable(taskYamlOverridesSchema.shape), flows: removable(flowYamlOverridesSchema.shape) };

/** A task option set to null that cannot be removed: which ones can. */
function withNullHint(path: YamlPath, value: unknown, message: string): string {
  const section = path[0] === "tasks" ? "task" : path[0] === "flows" ? "flow" : undefined;
  if (!section || path.length !== 3 || value !== null) return message;
  return `${message}; only ${REMOVABLE[`${section}s`].join(", ")} may be null (the ${section} then has none, whatever its code sets)`;
}

const valueAt = (raw: unknown, path: YamlPath): unknown =>
  path.reduce<unknown>(
    (node, key) => (node !== null && typeof node === "object" ? (node as Record<string | number, unknown>)[key] : undefined),
    raw,
  );

const mapping = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};

/**
 * A sink value that is the mask the API shows (`[redacted]`): a text read back from
 * `GET /api/config` or the console and applied again would store the mask in place of the secret,
 * and the sink would fail or sign wrongly. Checked on new text only (`known`): a stored version
 * still parses as it did.
 */
function checkMasked(raw: unknown, fail: (path: YamlPath, message: string) => void): void {
  const masked = `is "${REDACTED}", the mask the API and the console show in place of the real value: write the value itself (or use secret_env), as in the file this version came from; \`ax config rollback <version>\` stores an earlier version again with its real values`;
  for (const [group, settings] of Object.entries(mapping(mapping(raw).alerts))) {
    const sinks = mapping(settings).sinks;
    if (!Array.isArray(sinks)) continue;
    sinks.forEach((sink, i) => {
      const { url, secret, headers } = mapping(sink);
      const at = ["alerts", group, "sinks", i];
      if (typeof url === "string" && url.includes(REDACTED)) fail([...at, "url"], masked);
      if (secret === REDACTED) fail([...at, "secret"], masked);
      for (const [name, value] of Object.entries(mapping(headers))) if (value === REDACTED) fail([...at, "headers", name], masked);
    });
  }
}

/** Task and flow names the cluster does not define, read off the config (or, when a value is wrong, the raw file). */
function checkNames(config: unknown, known: KnownNames, fail: (path: YamlPath, message: string) => void): void {
  const top = mapping(config);
  const tasks = new Set(known.tasks);
  const retiredTasks = new Set(known.retired?.tasks);
  const retiredFlows = new Set(known.retired?.flows);
  const retired = (what: string) =>
    `${what} (ax flow retire): remove it from this file, or start a Runtime whose code defines the flow to bring it back`;
  for (const name of Object.keys(mapping(top.tasks))) {
    if (tasks.has(name)) continue;
    fail(
      ["tasks", name],
      retiredTasks.has(name)
        ? retired(`task "${name}" was retired with its flow`)
        : `unknown task "${name}" (defined: ${[...tasks].join(", ") || "none"})`,
    );
  }
  const flows = new Set(known.flows);
  const unknownFlow = (name: string) =>
    retiredFlows.has(name) ? retired(`flow "${name}" was retired`) : `unknown flow "${name}" (defined: ${[...flows].join(", ") || "none"})`;
  for (const name of Object.keys(mapping(top.flows))) {
    if (!flows.has(name)) fail(["flows", name], unknownFlow(name));
  }
  for (const [group, settings] of Object.entries(mapping(top.alerts))) {
    const listed = mapping(settings).flows;
    if (!Array.isArray(listed)) continue;
    listed.forEach((name, i) => {
      if (typeof name === "string" && !flows.has(name)) fail(["alerts", group, "flows", i], unknownFlow(name));
    });
  }
}
