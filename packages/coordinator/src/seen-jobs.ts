/**
 * What the reconciler already found in Redis, so a long healthy backlog costs one EXISTS per node
 * per `recheckMs` rather than per pass. Keyed by node, attempt and state: a node that moves on is
 * a new key and is checked again. Bounded: past `max` entries the oldest are forgotten (and so
 * merely checked again).
 */
export class SeenJobs {
  private readonly seenAt = new Map<string, number>();

  constructor(
    private readonly recheckMs: number,
    private readonly max: number,
  ) {}

  /** True while the job was found in Redis less than `recheckMs` ago. */
  has(key: string, now = Date.now()): boolean {
    const at = this.seenAt.get(key);
    if (at === undefined) return false;
    if (now - at < this.recheckMs) return true;
    this.seenAt.delete(key);
    return false;
  }

  add(key: string, now = Date.now()): void {
    // Re-inserting moves the key to the end, so the Map's order stays oldest first.
    this.seenAt.delete(key);
    this.seenAt.set(key, now);
    while (this.seenAt.size > this.max) this.seenAt.delete(this.seenAt.keys().next().value!);
  }

  /** Redis lost its data (FLUSHALL, a restart without persistence): nothing seen there holds. */
  clear(): void {
    this.seenAt.clear();
  }

  get size(): number {
    return this.seenAt.size;
  }
}
