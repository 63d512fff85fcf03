import type { Logger } from "pino";

/** What a signal stops: a started Runtime. */
export interface Stoppable {
  readonly log: Logger;
  stop(): Promise<void>;
}

/** Runtimes to stop per signal, and the one process listener serving each signal. */
const targets = new Map<NodeJS.Signals, { runtimes: Set<Stoppable>; listener: () => void }>();

/**
 * Stops `runtime` gracefully (`stop()`: in-flight attempts finish or are handed back) when the
 * process gets one of `signals`, as a deploy's SIGTERM. One listener per signal serves every
 * Runtime of the process. It removes itself when the signal comes, so a second signal does what it
 * would have done without ax; and once every Runtime stopped, when nothing else in the process
 * listened for that signal, the signal is raised again so that the process ends as it would have.
 * A service that handles the signal itself keeps control of its exit. Returns the unregister.
 */
export function stopOnSignals(runtime: Stoppable, signals: readonly NodeJS.Signals[]): () => void {
  for (const signal of signals) {
    let entry = targets.get(signal);
    if (!entry) {
      const listener = () => onSignal(signal);
      entry = { runtimes: new Set(), listener };
      targets.set(signal, entry);
      // First in line: a service's `once` listener is still registered when this one runs, so it is counted.
      process.prependListener(signal, listener);
    }
    entry.runtimes.add(runtime);
  }
  return () => {
    for (const signal of signals) {
      const entry = targets.get(signal);
      entry?.runtimes.delete(runtime);
      if (entry && entry.runtimes.size === 0) {
        process.off(signal, entry.listener);
        targets.delete(signal);
      }
    }
  };
}

function onSignal(signal: NodeJS.Signals): void {
  const entry = targets.get(signal);
  if (!entry) return;
  // A service listening too (with `on` or `once`) decides how the process ends.
  const serviceListens = process.listenerCount(signal) > 1;
  process.off(signal, entry.listener);
  targets.delete(signal);
  const stopping = [...entry.runtimes].map((runtime) => {
    runtime.log.info({ signal }, `${signal}: stopping the Runtime (in-flight attempts finish or are handed back)`);
    return runtime.stop().catch((err: unknown) => runtime.log.error({ err, signal }, "the Runtime did not stop cleanly"));
  });
  void Promise.all(stopping).then(() => {
    if (!serviceListens && process.listenerCount(signal) === 0) process.kill(process.pid, signal);
  });
}
