import { DEFAULT_LEASE_MS } from "@ax/common";
import { workersOnOtherPrefixes, type Db } from "@ax/store";
import type { Logger } from "pino";

/** How often the warning may repeat while the mix-up lasts. */
const WARN_EVERY_MS = 60_000;

/**
 * Warns of live workers of this history that use another Redis prefix than this coordinator:
 * they never see the jobs queued here, and the nodes they seem to serve wait for ever. Nothing
 * else would say so: such a node is neither failed nor requeued, it waits for a worker on its prefix.
 */
export class OtherPrefixWorkers {
  private warnedAt = 0;

  constructor(
    private readonly db: Db,
    private readonly prefix: string,
    private readonly log: Logger,
  ) {}

  async check(now = Date.now()): Promise<void> {
    if (now - this.warnedAt < WARN_EVERY_MS) return;
    const others = await workersOnOtherPrefixes(this.db, DEFAULT_LEASE_MS, this.prefix);
    if (others.length === 0) return;
    this.warnedAt = now;
    const listed = others.map((o) => `${o.workers} on "${o.prefix}" (${o.hosts.join(", ")})`).join(", ");
    this.log.warn(
      { prefix: this.prefix, others },
      `live workers of this history use another Redis prefix than this coordinator's "${this.prefix}": ${listed}; they never take this prefix's jobs. Give every process the same --prefix (AX_PREFIX)`,
    );
  }
}
