import type { ChildMessage, ParentMessage } from "./protocol.js";

/** What an executor hears from its child: its messages, then its exit. */
export type ChildEvent = ChildMessage | { type: "exit"; exit: ChildExit };

/** How a thread or process child ended. */
export interface ChildExit {
  /** It hit its heap cap (resourceLimits / --max-old-space-size). */
  outOfMemory: boolean;
  /** An error the runtime reported for it, if any (uncaught in the thread, spawn failure). */
  error: Error | undefined;
  /** e.g. "exit code 1", "signal SIGKILL", for messages. */
  description: string;
}

/** A worker thread or child process running `isolated-entry.ts`, as the executors drive it. */
export interface IsolatedChild {
  readonly kind: "thread" | "process";
  /** Resolves when the child has loaded its entry; rejects if it exits first. */
  readonly ready: Promise<void>;
  /** Resolves once, when the child is gone for whatever reason. */
  readonly exited: Promise<ChildExit>;
  readonly alive: boolean;
  send(message: ParentMessage): void;
  /** Returns a function that stops listening (a pooled child outlives many attempts). */
  listen(listener: (event: ChildEvent) => void): () => void;
  /** CPU time the child has used, ms; null where it cannot be measured (no /proc). */
  cpuMs(): number | null;
  /** Resident memory of the child, MB; null for a thread (it shares the worker's process) or without /proc. */
  rssMb(): number | null;
  /**
   * Stops it now, whatever its code is doing (Worker.terminate / SIGKILL). Resolves once its code
   * can no longer run; a thread may still be tearing its heap down then, `exited` follows.
   */
  kill(): Promise<void>;
  /** An idle child must not keep the worker process alive. */
  hold(busy: boolean): void;
}

/** Idle children are kept this long for the next attempt of the same module, then stopped. */
const IDLE_MS = 30_000;

interface IdleChild {
  child: IsolatedChild;
  timer: NodeJS.Timeout;
}

/**
 * Warm children by key (executor, module, memory cap). Loading a task module and the SDK it
 * imports takes a second or more, so a child that finished an attempt cleanly serves the next
 * one; a child that was stopped, crashed or ran out of memory is never returned here.
 */
export class ChildPool {
  private readonly idle = new Map<string, IdleChild[]>();

  take(key: string): IsolatedChild | undefined {
    const list = this.idle.get(key);
    while (list?.length) {
      const { child, timer } = list.pop()!;
      clearTimeout(timer);
      if (child.alive) {
        child.hold(true);
        return child;
      }
    }
    return undefined;
  }

  give(key: string, child: IsolatedChild): void {
    if (!child.alive) return;
    child.hold(false);
    const list = this.idle.get(key) ?? [];
    const entry: IdleChild = {
      child,
      timer: setTimeout(() => {
        list.splice(list.indexOf(entry), 1);
        void child.kill();
      }, IDLE_MS).unref(),
    };
    list.push(entry);
    this.idle.set(key, list);
  }

  /** Stops every idle child (busy ones belong to their attempts). */
  async close(): Promise<void> {
    const all = [...this.idle.values()].flat();
    this.idle.clear();
    for (const { timer } of all) clearTimeout(timer);
    await Promise.all(all.map(({ child }) => child.kill().then(() => child.exited)));
  }
}
