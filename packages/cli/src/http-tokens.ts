import type { ApiTokenInfo, CreatedApiToken, Duration, TokenScope } from "ax-scheduler";
import { parseDuration, type DataDirHolder } from "@ax/common";
import { apiRequest, type ApiRequest, type Json } from "./api-request.js";
import type { TokenApi } from "./token-commands.js";

const dateOrNull = (at: string | null) => (at === null ? null : new Date(at));
const infoOf = <T extends Json<ApiTokenInfo>>(t: T) => ({
  ...t,
  createdAt: new Date(t.createdAt),
  expiresAt: dateOrNull(t.expiresAt),
  lastUsedAt: dateOrNull(t.lastUsedAt),
});

/**
 * `ax token` through the HTTP API of the process that holds an embedded data directory: what a
 * service's own Runtime with the api role and tokens on needs (`ax dev` checks none). Changes are
 * recorded as that API records its callers, not as `cli:<os user>`; once tokens exist there, set
 * AX_TOKEN to an admin one.
 */
export class HttpTokenApi implements TokenApi {
  private readonly request: ApiRequest;

  constructor(holder: DataDirHolder & { api: string }) {
    this.request = apiRequest(holder);
  }

  async create(options: { name: string; scope: TokenScope; expires?: Duration | undefined }): Promise<CreatedApiToken> {
    const expiresAt = options.expires === undefined ? undefined : new Date(Date.now() + parseDuration(options.expires)).toISOString();
    return infoOf(
      await this.request<Json<CreatedApiToken>>("POST", "/api/tokens", { name: options.name, scope: options.scope, expiresAt }),
    );
  }

  async list(): Promise<ApiTokenInfo[]> {
    const { tokens } = await this.request<{ tokens: Json<ApiTokenInfo>[] }>("GET", "/api/tokens");
    return tokens.map(infoOf);
  }

  async revoke(name: string): Promise<void> {
    await this.request("DELETE", `/api/tokens/${encodeURIComponent(name)}`);
  }
}
