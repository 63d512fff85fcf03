import { currentFlowVersion, type Db, type FlowVersion } from "@ax/store";

const FLOW_CACHE_MS = 5000;

/**
 * The latest registered version of each flow a client triggers, kept 5 s. Concurrent triggers
 * share one lookup; an unknown flow is not cached, so it is found once registered. A flow retired
 * elsewhere meanwhile is refused by the statement that writes its runs (`createRuns`).
 */
export class FlowVersions {
  private readonly versions = new Map<string, { at: number; version: Promise<FlowVersion | undefined> }>();

  constructor(private readonly db: Db) {}

  /** The client itself retired the flow: its next trigger finds that out at once. */
  forget(name: string): void {
    this.versions.delete(name);
  }

  async get(name: string): Promise<FlowVersion | undefined> {
    const cached = this.versions.get(name);
    if (cached && Date.now() - cached.at < FLOW_CACHE_MS) return cached.version;
    const version = currentFlowVersion(this.db, name);
    this.versions.set(name, { at: Date.now(), version });
    const found = await version.catch((error: unknown) => {
      this.versions.delete(name);
      throw error;
    });
    if (!found) this.versions.delete(name);
    return found;
  }
}
