import { userInfo } from "node:os";
import { z } from "zod";
import {
  createApiToken,
  listApiTokens,
  revokeApiToken,
  TOKEN_SCOPES,
  type Actor,
  type ApiTokenInfo,
  type AuditEntry,
  type CreatedApiToken,
  type Db,
  type TokenScope,
} from "@ax/store";
import { AxConfigError, TOKEN_NAME, TOKEN_NAME_RULE } from "@ax/common";
import { durationMs, type Duration } from "./duration.js";
import { formatIssues } from "./option-checks.js";

export type { ApiTokenInfo, AuditEntry, CreatedApiToken, TokenScope };

const createOptions = z.object({
  name: z.string().regex(TOKEN_NAME, TOKEN_NAME_RULE),
  scope: z.enum(TOKEN_SCOPES),
  expires: durationMs.optional(),
});

/** Who a change made straight on the storage (not through the API) is recorded as. */
export function localActor(): Actor {
  let user = "unknown";
  try {
    user = userInfo().username;
  } catch {
    // A container user without a passwd entry: the audit row still says the change was local.
  }
  return { name: `cli:${user}` };
}

/** API tokens on the storage (the API checks them): create (shown once), list, revoke. */
export class Tokens {
  constructor(
    private readonly db: Db,
    private readonly actor: Actor = localActor(),
  ) {}

  /** The answer's `token` is the only copy: PostgreSQL keeps its hash. */
  async create(options: { name: string; scope: TokenScope; expires?: Duration | undefined }): Promise<CreatedApiToken> {
    const parsed = createOptions.safeParse(options);
    if (!parsed.success) throw new AxConfigError(`tokens.create: ${formatIssues(parsed.error)}`);
    const { name, scope, expires } = parsed.data;
    return createApiToken(
      this.db,
      { name, scope, expiresAt: expires === undefined ? undefined : new Date(Date.now() + expires) },
      this.actor,
    );
  }

  list(): Promise<ApiTokenInfo[]> {
    return listApiTokens(this.db);
  }

  /** The token stops working at once on every API process. */
  revoke(name: string): Promise<void> {
    return revokeApiToken(this.db, name, this.actor);
  }
}
