import { admitsRuns, flowSettings, type Db, type FlowSettingsRow } from "@ax/store";

const CACHE_MS = 5000;

/** Whether the flow's runs are written held and started by admission (`maxConcurrentRuns`, `concurrency` per key). */
export async function flowAdmitsRuns(db: Db, flow: string): Promise<boolean> {
  return admitsRuns(await flowSettings(db, flow));
}

/**
 * Each flow's stored settings, as the Runtimes wrote them: whether its runs go through admission,
 * which keys it computes in code. Cached for a few seconds so that triggers of unlimited flows pay
 * no extra read; a change applies within that time.
 */
export class FlowCaps {
  private readonly cache = new Map<string, { at: number; settings: Promise<FlowSettingsRow | undefined> }>();

  constructor(private readonly db: Db) {}

  settings(flow: string): Promise<FlowSettingsRow | undefined> {
    const cached = this.cache.get(flow);
    if (cached && Date.now() - cached.at < CACHE_MS) return cached.settings;
    const settings = flowSettings(this.db, flow);
    this.cache.set(flow, { at: Date.now(), settings });
    settings.catch(() => this.cache.delete(flow));
    return settings;
  }

  async get(flow: string): Promise<boolean> {
    return admitsRuns(await this.settings(flow));
  }
}
