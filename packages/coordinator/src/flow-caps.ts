import { admitsRuns, flowSettings, type Db } from "@ax/store";

const CACHE_MS = 5000;

/** Whether the flow's runs are written held and started by admission (`maxConcurrentRuns`, `concurrency` per key). */
export async function flowAdmitsRuns(db: Db, flow: string): Promise<boolean> {
  return admitsRuns(await flowSettings(db, flow));
}

/**
 * Whether each flow's runs go through admission, as the Runtimes stored its settings, cached for
 * a few seconds so that triggers of unlimited flows pay no extra read; a change applies within
 * that time.
 */
export class FlowCaps {
  private readonly cache = new Map<string, { at: number; admits: Promise<boolean> }>();

  constructor(private readonly db: Db) {}

  get(flow: string): Promise<boolean> {
    const cached = this.cache.get(flow);
    if (cached && Date.now() - cached.at < CACHE_MS) return cached.admits;
    const admits = flowAdmitsRuns(this.db, flow);
    this.cache.set(flow, { at: Date.now(), admits });
    admits.catch(() => this.cache.delete(flow));
    return admits;
  }
}
