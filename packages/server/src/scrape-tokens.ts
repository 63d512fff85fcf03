import { createHash } from "node:crypto";
import type { TokenScope } from "@ax/store";

export interface VerifiedToken {
  name: string;
  scope: TokenScope;
  expiresAt: Date | null;
}

/** How long after its last check in PostgreSQL a token stays good for `/metrics` while PostgreSQL is unreachable. */
const REMEMBERED_MS = 10 * 60_000;
/** Scrapers are few; the oldest is dropped past this many. */
const MAX_REMEMBERED = 100;

/**
 * Tokens that `/metrics` recently let in, so that Prometheus goes on scraping a process through a
 * PostgreSQL outage, when its metrics matter most: the token check needs PostgreSQL, and without
 * this every scrape would fail with it. A token revoked while PostgreSQL is away cannot be told
 * apart, but nor can it be revoked then; a token past its expiry is refused as ever. Keyed by a
 * hash, so no secret is kept.
 */
export class ScrapeTokens {
  private readonly verified = new Map<string, { token: VerifiedToken; at: number }>();

  private static key(bearer: string): string {
    return createHash("sha256").update(bearer).digest("hex");
  }

  remember(bearer: string, token: VerifiedToken | undefined): void {
    const key = ScrapeTokens.key(bearer);
    this.verified.delete(key);
    if (!token) return;
    this.verified.set(key, { token, at: Date.now() });
    if (this.verified.size > MAX_REMEMBERED) this.verified.delete(this.verified.keys().next().value!);
  }

  recall(bearer: string): VerifiedToken | undefined {
    const entry = this.verified.get(ScrapeTokens.key(bearer));
    const now = Date.now();
    if (!entry || now - entry.at > REMEMBERED_MS) return undefined;
    const expired = entry.token.expiresAt !== null && entry.token.expiresAt.getTime() <= now;
    return expired ? undefined : entry.token;
  }
}
