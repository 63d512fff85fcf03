import type { AlertGroup } from "@ax/coordinator";
import type { CodeOptionsRow, FlowConcurrency, FlowDag, FlowSettingsRow, Json, ScheduleDefinition } from "@ax/store";
import type { RunnableTask, TaskSource } from "@ax/worker";
import type { ServedFlow } from "@ax/server";
import { AxDefinitionError } from "@ax/common";
import { resolveAlertGroups } from "./config/alerts-config.js";
import type { RuntimeConfig } from "./config/runtime-config.js";
import { dagHash, type Flow } from "./definition/flow.js";
import type { AnyTask } from "./definition/task.js";
import { overridden, resolveSchedule, type FlowYamlOverrides } from "./flow-options.js";
import { resolveTaskOptions } from "./options.js";
import { servedFlows } from "./served-flows.js";

/**
 * The flows and tasks a Runtime was given, with the config in force applied to their options:
 * what the worker runs, the versions and settings the coordinators store, what the API serves.
 * Applying a new config changes the options every later attempt reads.
 */
export class RuntimeCode {
  private readonly tasks = new Map<string, RunnableTask>();
  private current: RuntimeConfig = { pools: {}, tasks: {}, flows: {}, alerts: {} };
  private groups: Record<string, AlertGroup> = {};

  constructor(readonly flows: Flow<any>[]) {
    const flowNames = new Set<string>();
    for (const flow of flows) {
      if (flowNames.has(flow.name)) throw new AxDefinitionError(`two flows are named "${flow.name}"; flow names must be unique`);
      flowNames.add(flow.name);
      for (const task of flow.tasks.values()) this.addTask(task);
    }
  }

  get config(): RuntimeConfig {
    return this.current;
  }

  /** The alert groups of the config in force. */
  get alertGroups(): Record<string, AlertGroup> {
    return this.groups;
  }

  get flowNames(): string[] {
    return this.flows.map((f) => f.name);
  }

  get taskNames(): string[] {
    return [...this.tasks.keys()];
  }

  /** The tasks as the worker reads them, options included, at each attempt. */
  taskSource(): TaskSource {
    return { get: (name) => this.tasks.get(name), names: () => this.taskNames };
  }

  /** Every worker group one of the tasks runs in. */
  queues(): string[] {
    return [...new Set([...this.tasks.values()].map((t) => t.options.queue))];
  }

  /** The cluster-wide limits of the config in force. */
  clusterLimits(): { maxConcurrency: number | null; pools: Record<string, number> } {
    return { maxConcurrency: this.current.maxConcurrency ?? null, pools: this.current.pools };
  }

  /**
   * Takes `config`'s overrides into every task's options. Answers what is set but cannot hold, one
   * sentence each: `resources` on a task the inline executor runs, which shares this process's heap
   * and clock and so cannot cap either.
   */
  apply(config: RuntimeConfig): string[] {
    this.current = config;
    this.groups = resolveAlertGroups(config.alerts);
    const unenforced = new Set<string>();
    for (const flow of this.flows) {
      for (const task of flow.tasks.values()) {
        const runnable = this.tasks.get(task.taskName)!;
        runnable.options = resolveTaskOptions(task.taskName, task.codeOptions, config.tasks[task.taskName]);
        if (runnable.options.resources && runnable.options.executor === "inline") unenforced.add(task.taskName);
      }
    }
    return [...unenforced].map(
      (task) =>
        `task "${task}" sets resources, but runs on the inline executor, which cannot enforce them: set executor: "thread" or "process" (in code or in runtime.yaml) for hard limits, or leave resources out`,
    );
  }

  /** Each scheduled flow's schedule after YAML overrides. */
  schedules(): ScheduleDefinition[] {
    return this.flows.flatMap((flow) => resolveSchedule(flow.name, flow.options, this.current.flows[flow.name]) ?? []);
  }

  /** The flow options coordinators act on, after YAML overrides. */
  settingsOf(flow: Flow<any>): FlowSettingsRow {
    const yaml = this.current.flows[flow.name];
    return {
      flow: flow.name,
      maxConcurrentRuns: overridden("maxConcurrentRuns", flow.options, yaml) ?? null,
      schedule: overridden("schedule", flow.options, yaml) ?? null,
      concurrency: keyedConcurrency(overridden("concurrency", flow.options, yaml)),
      keyFunctions: KEY_FUNCTIONS.filter((option) => typeof flow.options[option] === "function"),
    };
  }

  /** The DAG as stored, each node's queue after YAML overrides, and its hash. */
  versionOf(flow: Flow<any>): [FlowDag, string] {
    const dag: FlowDag = {
      flow: flow.name,
      nodes: flow.dag.nodes.map((n) => ({ ...n, queue: this.tasks.get(n.task)?.options.queue ?? n.queue })),
    };
    return [dag, dagHash(dag)];
  }

  /** What the API serves of each flow. */
  served(): ServedFlow[] {
    return servedFlows(this.flows, this.current.flows);
  }

  /** Options as code sets them, as JSON (error classes by name), for `ax config show`. */
  codeOptionRows(): CodeOptionsRow[] {
    const asJson = (options: object): Record<string, Json> =>
      JSON.parse(
        JSON.stringify(options, (key, value: unknown) =>
          typeof value === "function" ? (key === "idempotencyKey" || key === "businessKey" ? undefined : value.name) : value,
        ),
      ) as Record<string, Json>;
    const tasks = new Map<string, CodeOptionsRow>();
    for (const flow of this.flows) {
      for (const task of flow.tasks.values())
        tasks.set(task.taskName, { kind: "task", name: task.taskName, options: asJson(task.codeOptions) });
    }
    const flows = this.flows.map((flow): CodeOptionsRow => {
      const { name: _name, ...options } = flow.options;
      return { kind: "flow", name: flow.name, options: asJson(options) };
    });
    return [...tasks.values(), ...flows];
  }

  private addTask(task: AnyTask): void {
    const known = this.tasks.get(task.taskName);
    if (known && known.fn !== task.fn) {
      throw new AxDefinitionError(`two different tasks are named "${task.taskName}"; task names must be unique across the runtime's flows`);
    }
    this.tasks.set(task.taskName, {
      name: task.taskName,
      fn: task.fn as RunnableTask["fn"],
      options: task.options,
      moduleUrl: task.moduleUrl,
    });
  }
}

/** A flow's `concurrency` as coordinators store it: the strategy made explicit. */
/** Flow options a producer can only apply with the flow's code. */
const KEY_FUNCTIONS = ["idempotencyKey", "businessKey"] as const;

function keyedConcurrency(option: FlowYamlOverrides["concurrency"]): FlowConcurrency | null {
  return option ? { max: option.max, key: option.key, strategy: option.strategy ?? "queue" } : null;
}
