import { DEFAULT_ALERT_GROUP } from "@ax/coordinator";
import { latestConfigVersion, listCodeOptions, type Db, type Json } from "@ax/store";
import { AxConfigError, AxUnknownFlowError, DEFAULT_RETENTION_MS } from "@ax/common";
import { FLOW_DEFAULTS, type FlowOverrides } from "../flow-options.js";
import { resolveTaskOptions, type TaskOverrides } from "../options.js";
import { parseRuntimeConfig } from "./runtime-config.js";
import { snake } from "./yaml-keys.js";

/** One option's effective value and where it came from. */
export interface EffectiveOption {
  /** The option as spelled in YAML. */
  option: string;
  /** Durations in milliseconds; null = none/unlimited. */
  value: Json;
  source: "code" | "default" | `yaml v${number}`;
}

export interface EffectiveConfig {
  /** The stored version in force; null when none is stored (code and defaults only). */
  version: number | null;
  cluster: EffectiveOption[];
  tasks: Record<string, EffectiveOption[]>;
  flows: Record<string, EffectiveOption[]>;
}

export interface EffectiveFilter {
  task?: string | undefined;
  flow?: string | undefined;
}

/** Resolved task option keys carry their unit (`timeoutMs`); YAML's do not. */
const optionOf = (resolvedKey: string) => snake(resolvedKey.replace(/Ms$/, ""));

/**
 * The option a resolved key is read from, as code and YAML spell it: the per-key limits are not
 * options of their own but `concurrency` / `rate_limit` with a `key`, so they come from where those do.
 */
const SET_BY: Record<string, string> = { concurrencyKey: "concurrency", rateLimitKey: "rateLimit" };
const setBy = (resolvedKey: string) => SET_BY[resolvedKey] ?? resolvedKey.replace(/Ms$/, "");

/**
 * A per-key limit as it was written (`{ max, key: "user_id", strategy }`): resolved, its `key` is
 * the compiled function and `keySource` what the code or YAML said. Any other value as it is.
 */
function shownKeyedLimit(value: unknown): unknown {
  if (value === null || typeof value !== "object" || !("keySource" in value)) return value;
  const { key: _compiled, keySource, ...limit } = value as { key: unknown; keySource: string };
  return { ...limit, key: keySource };
}

/** What an unset option means, where the resolved value leaves it null for the code that reads it. */
const SHOWN_DEFAULTS: Record<string, Json> = { alertGroup: DEFAULT_ALERT_GROUP };

function sourceOf(key: string, code: object, yaml: object | undefined, version: number | null): EffectiveOption["source"] {
  if (yaml && key in yaml && version !== null) return `yaml v${version}`;
  if (key in code) return "code";
  return "default";
}

/**
 * The effective value of every option and its source: `yaml vN` (the stored version in force),
 * `code` (as the Runtimes registered it) or `default`. `task`/`flow` narrow it to one of them.
 */
export async function effectiveConfig(db: Db, filter: EffectiveFilter = {}): Promise<EffectiveConfig> {
  const latest = await latestConfigVersion(db);
  const version = latest?.version ?? null;
  const yaml = latest
    ? parseRuntimeConfig(latest.yaml, latest.file)
    : { pools: {}, tasks: {}, flows: {}, alerts: {}, maxConcurrency: undefined, retentionMs: undefined };
  const code = await listCodeOptions(db);
  const codeOf = (kind: "task" | "flow") => new Map(code.filter((c) => c.kind === kind).map((c) => [c.name, c.options]));
  const taskCode = codeOf("task");
  const flowCode = codeOf("flow");
  const taskNames = [...new Set([...taskCode.keys(), ...Object.keys(yaml.tasks)])].sort();
  const flowNames = [...new Set([...flowCode.keys(), ...Object.keys(yaml.flows)])].sort();
  for (const [kind, wanted, names] of [
    ["task", filter.task, taskNames],
    ["flow", filter.flow, flowNames],
  ] as const) {
    if (wanted !== undefined && !names.includes(wanted)) {
      if (kind === "flow") throw new AxUnknownFlowError(wanted, names);
      throw new AxConfigError(
        `unknown ${kind} "${wanted}" (known: ${names.join(", ") || "none"}); a ${kind} is known once a Runtime defining it has started`,
      );
    }
  }
  const tasks: Record<string, EffectiveOption[]> = {};
  for (const name of filter.flow !== undefined && filter.task === undefined ? [] : taskNames) {
    if (filter.task !== undefined && name !== filter.task) continue;
    const codeOptions = (taskCode.get(name) ?? {}) as TaskOverrides;
    const yamlOptions = yaml.tasks[name];
    const resolved = resolveTaskOptions(name, codeOptions, yamlOptions);
    tasks[name] = Object.entries(resolved)
      .filter(([key]) => key !== "name")
      .map(([key, value]) => ({
        option: optionOf(key),
        value: (shownKeyedLimit(value) ?? SHOWN_DEFAULTS[key] ?? null) as Json,
        source: sourceOf(setBy(key), codeOptions, yamlOptions, version),
      }));
  }
  const flows: Record<string, EffectiveOption[]> = {};
  for (const name of filter.task !== undefined && filter.flow === undefined ? [] : flowNames) {
    if (filter.flow !== undefined && name !== filter.flow) continue;
    const codeOptions = (flowCode.get(name) ?? {}) as FlowOverrides;
    const yamlOptions = yaml.flows[name];
    const merged: Record<string, unknown> = { ...FLOW_DEFAULTS, ...codeOptions, ...yamlOptions };
    flows[name] = Object.keys(FLOW_DEFAULTS).map((key) => ({
      option: snake(key),
      value: (merged[key] ?? null) as Json,
      source: sourceOf(key, codeOptions, yamlOptions, version),
    }));
  }
  const fromYaml = (set: boolean): EffectiveOption["source"] => (set && version !== null ? `yaml v${version}` : "default");
  const cluster: EffectiveOption[] = [
    { option: "max_concurrency", value: yaml.maxConcurrency ?? null, source: fromYaml(yaml.maxConcurrency !== undefined) },
    { option: "pools", value: yaml.pools, source: fromYaml(Object.keys(yaml.pools).length > 0) },
    {
      option: "retention",
      value: yaml.retentionMs ?? DEFAULT_RETENTION_MS,
      source: fromYaml(yaml.retentionMs !== undefined),
    },
  ];
  return { version, cluster, tasks, flows };
}
