import { flowSettings, type Db } from "@ax/store";

const CACHE_MS = 5000;

export async function flowCap(db: Db, flow: string): Promise<number | null> {
  return (await flowSettings(db, flow))?.maxConcurrentRuns ?? null;
}

/**
 * Each flow's `maxConcurrentRuns` as the Runtimes stored it, cached for a few seconds so that
 * triggers of uncapped flows pay no extra read; a changed cap applies within that time.
 */
export class FlowCaps {
  private readonly cache = new Map<string, { at: number; cap: Promise<number | null> }>();

  constructor(private readonly db: Db) {}

  get(flow: string): Promise<number | null> {
    const cached = this.cache.get(flow);
    if (cached && Date.now() - cached.at < CACHE_MS) return cached.cap;
    const cap = flowCap(this.db, flow);
    this.cache.set(flow, { at: Date.now(), cap });
    cap.catch(() => this.cache.delete(flow));
    return cap;
  }
}
