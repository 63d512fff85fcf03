import { within, type Json } from "@ax/store";

/** How long an attempt's end waits for its last progress to be stored. */
const FLUSH_MS = 1000;

/**
 * One attempt's heartbeat progress, written in the order it was sent: one write in flight and
 * the newest value waiting behind it (values in between are superseded). Independent writes
 * landed in any order, so a failed node could keep an older value as its last progress, and a
 * heartbeat sent just before the function returned was dropped by the write that closed it.
 */
export class ProgressWrites {
  private inFlight: Promise<void> | undefined;
  private newest: { progress: Json } | undefined;

  constructor(
    private readonly write: (progress: Json) => Promise<void>,
    private readonly failed: (err: unknown) => void,
  ) {}

  submit(progress: Json): void {
    this.newest = { progress };
    this.inFlight ??= this.drain();
  }

  /** Before the attempt's closing write: the newest value is stored (or a bounded wait gave up on it). */
  async flushed(): Promise<void> {
    if (this.inFlight) await within(this.inFlight, FLUSH_MS);
  }

  private async drain(): Promise<void> {
    for (let next = this.newest; next; next = this.newest) {
      this.newest = undefined;
      await this.write(next.progress).catch(this.failed);
    }
    this.inFlight = undefined;
  }
}
