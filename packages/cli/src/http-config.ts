import type {
  ConfigApplied,
  ConfigCheck,
  ConfigHistoryEntry,
  ConfigVersionInfo,
  EditOptions,
  EffectiveConfig,
  ProcessConfigState,
} from "ax-scheduler";
import type { DataDirHolder } from "@ax/common";
import type { DeliveryResult } from "@ax/coordinator";
import { apiRequest, queryString, type ApiRequest, type Json } from "./api-request.js";
import type { ConfigApi } from "./config-commands.js";

/**
 * `ax config` (and `ax alerts test`, which sends with the config in force) through the HTTP API of
 * the `ax dev` that holds an embedded data directory. The API masks secrets in every text it
 * answers, so a diff read this way shows them masked.
 */
export class HttpConfigApi implements ConfigApi {
  private readonly request: ApiRequest;

  constructor(holder: DataDirHolder & { api: string }) {
    this.request = apiRequest(holder);
  }

  async apply(text: string, file: string, author: string, options: EditOptions = {}): Promise<ConfigApplied> {
    return this.request("POST", "/api/config", { yaml: text, file, author, base: options.base });
  }

  async check(text: string, file: string): Promise<ConfigCheck> {
    return this.request("POST", "/api/config/check", { yaml: text, file });
  }

  async rollback(version: number, author: string): Promise<ConfigApplied> {
    return this.request("POST", "/api/config/rollback", { version, author });
  }

  async current(): Promise<ConfigVersionInfo | undefined> {
    const { config } = await this.request<{ config: ConfigVersionInfo | null }>("GET", "/api/config");
    return config ?? undefined;
  }

  async history(limit?: number): Promise<ConfigHistoryEntry[]> {
    const { versions } = await this.request<{ versions: ConfigHistoryEntry[] }>("GET", `/api/config/versions${queryString({ limit })}`);
    return versions;
  }

  async diff(a: number, b: number): Promise<string> {
    const { diff } = await this.request<{ diff: string }>("GET", `/api/config/diff${queryString({ from: a, to: b })}`);
    return diff;
  }

  async cluster(): Promise<ProcessConfigState[]> {
    const { processes } = await this.request<{ processes: Json<ProcessConfigState>[] }>("GET", "/api/config/cluster");
    return processes.map((p) => ({ ...p, heartbeatAt: new Date(p.heartbeatAt) }));
  }

  /** The `ax dev` sends it with the sinks' secrets, which it never answers; a log sink writes to its log. */
  async testAlert(group: string): Promise<DeliveryResult[]> {
    const { results } = await this.request<{ results: DeliveryResult[] }>("POST", "/api/alerts/test", { group });
    return results;
  }

  async effective(filter: { task?: string | undefined; flow?: string | undefined } = {}): Promise<EffectiveConfig> {
    return this.request("GET", `/api/config/effective${queryString(filter)}`);
  }
}
