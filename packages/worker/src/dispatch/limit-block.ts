/**
 * Whether a queue waits on a full limit. A refused acquire sets it; it lasts until its time is up
 * or until one of the limits it waits on is released, whichever comes first. Only a new refusal
 * changes what it waits on: a fetch of the same queue that succeeds meanwhile (several are in
 * flight at once) says nothing about the limit the refusal found full. Before 0.7.3 such a
 * success forgot the limit, and the release that should have lifted the block could not, so
 * the queue waited out the full recheck interval although the limit had room.
 */
export class LimitBlock {
  private until = 0;
  private waitingOn: readonly string[] = [];

  /** Epoch ms before which the queue is not fetched from; 0 or past when it is not blocked. */
  get blockedUntil(): number {
    return this.until;
  }

  blocks(now: number): boolean {
    return this.until > now;
  }

  /** A refused acquire: no fetch before `until`, unless one of `keys` (the full limits) is released first. */
  block(until: number, keys: readonly string[]): void {
    this.until = until;
    this.waitingOn = keys;
  }

  /** Limits released somewhere in the cluster: lifts the block if it waits on one of them. */
  released(keys: ReadonlySet<string>): void {
    if (this.waitingOn.some((key) => keys.has(key))) this.until = 0;
  }
}
