/**
 * Cancels one attempt from outside (a run's cancel, a shutdown). Every attempt gets one and
 * almost none is ever used: unlike an AbortController (an EventTarget and an AbortSignal per
 * attempt, and a listener added and removed), it costs one small object.
 */
export class AttemptCancel {
  private reasonGiven: Error | undefined;
  private listener: ((reason: Error) => void) | undefined;

  /** Why the attempt was aborted, once it was. */
  get reason(): Error | undefined {
    return this.reasonGiven;
  }

  /** Aborts once; later calls change nothing. True when this call aborted it. */
  abort(reason: Error): boolean {
    if (this.reasonGiven) return false;
    this.reasonGiven = reason;
    this.listener?.(reason);
    return true;
  }

  /**
   * `listener` runs when the attempt is aborted, at once if it already was; the executor running
   * the attempt is the only listener. Returns what removes it.
   */
  onAbort(listener: (reason: Error) => void): () => void {
    if (this.reasonGiven) {
      listener(this.reasonGiven);
      return () => {};
    }
    this.listener = listener;
    return () => {
      if (this.listener === listener) this.listener = undefined;
    };
  }
}
