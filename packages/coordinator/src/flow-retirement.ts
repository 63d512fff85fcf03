import {
  latestConfigVersion,
  lockFlowForRetirement,
  markFlowRetired,
  toStorableText,
  unknownFlowError,
  type Db,
  type Json,
  type RetirementState,
} from "@ax/store";
import { AxFlowInUseError } from "@ax/common";

/** A process that reported within this long is live: the `processes` report runs every second. */
export const RETIRE_LIVE_MS = 10_000;

export interface RetiredFlow {
  flow: string;
  retiredAt: Date;
  /** False when it had been retired already (retiring twice changes nothing). */
  changed: boolean;
  /** Tasks no other flow in use runs: config may no longer name them. */
  tasks: string[];
}

/**
 * Takes a flow whose code is gone out of use: it is no longer listed, triggered (by name, a rerun
 * or a backfill), scheduled or named in runtime.yaml, while its runs stay readable. Refused while
 * a live process's code defines it, a run of it is unfinished, or the config in force names it or
 * a task only it runs. A Runtime whose code defines it brings it back by registering it.
 */
export async function retireFlow(db: Db, flow: string, options: { liveMs?: number } = {}): Promise<RetiredFlow> {
  if (toStorableText(flow) !== flow) throw await unknownFlowError(db, flow);
  const liveMs = options.liveMs ?? RETIRE_LIVE_MS;
  return db.transaction(async (tx) => {
    const state = await lockFlowForRetirement(tx, flow, liveMs);
    if (!state) throw await unknownFlowError(tx, flow);
    if (state.retiredAt) return { flow, retiredAt: state.retiredAt, changed: false, tasks: state.ownTasks };
    const why = inUse(state, liveMs) ?? namedInConfig((await latestConfigVersion(tx)) ?? null, flow, state.ownTasks);
    if (why) throw new AxFlowInUseError(flow, why);
    return { flow, retiredAt: await markFlowRetired(tx, flow), changed: true, tasks: state.ownTasks };
  });
}

function inUse(state: RetirementState, liveMs: number): string | undefined {
  if (state.definers.length > 0) {
    const list = state.definers.map((p) => `${p.hostname} pid ${p.pid}`).join(", ");
    return `the code of ${state.definers.length} live process(es) defines it, or may: a process of a release before 0.21 does not say which flows it defines (${list}). Deploy code without it and stop or upgrade those processes first (a process's report counts as live for ${liveMs / 1000} s)`;
  }
  if (state.registeredSecondsAgo * 1000 < liveMs) {
    return `a Runtime registered it ${Math.round(state.registeredSecondsAgo)} s ago, so one whose code defines it may be starting. Deploy code without it, then retire it once no process defines it`;
  }
  if (state.unfinished.count > 0) {
    const more = state.unfinished.count > state.unfinished.sample.length ? ", …" : "";
    return `${state.unfinished.count} of its runs are not finished (${state.unfinished.sample.join(", ")}${more}). Wait for them or cancel them (ax cancel <id>), then retire it`;
  }
  return undefined;
}

/** The places of the stored config that name the flow or a task only it runs, as `flows.<name>`-style paths. */
function namedInConfig(version: { version: number; file: string; parsed: Json } | null, flow: string, tasks: string[]): string | undefined {
  if (!version) return undefined;
  const parsed = (version.parsed ?? {}) as {
    flows?: Record<string, unknown>;
    tasks?: Record<string, unknown>;
    alerts?: Record<string, { flows?: string[] }>;
  };
  const places = [
    ...(parsed.flows && flow in parsed.flows ? [`flows.${flow}`] : []),
    ...tasks.filter((task) => parsed.tasks && task in parsed.tasks).map((task) => `tasks.${task}`),
    ...Object.entries(parsed.alerts ?? {})
      .filter(([, group]) => group.flows?.includes(flow))
      .map(([group]) => `alerts.${group}.flows`),
  ];
  if (places.length === 0) return undefined;
  return `config version ${version.version} (${version.file}) names it at ${places.join(", ")}. Apply a version without them (ax config apply), then retire it`;
}
