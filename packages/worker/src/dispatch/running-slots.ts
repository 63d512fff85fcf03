import type { Job } from "bullmq";
import type { LimitGate, LimitSpec, NodeJobData, Permit } from "@ax/coordinator";
import type { Unsatisfiable } from "./limit-spec.js";

interface Slot {
  task: string;
  job: Job<NodeJobData>;
  /** Semaphore keys the job counts against: its permit's, and those adopted since. */
  holds: Set<string>;
  adopted: Permit[];
  /** Counted against its business key's limit: admitted under one, or adopted into it since. */
  keyed: boolean;
  /** Frees the key's slot adopted since the job started (and wakes the key's line). */
  releaseKey?: (() => Promise<void>) | undefined;
  ended: boolean;
}

/** What a finished job still holds: the permits adopted for it, and a key's slot adopted since it started. */
export interface EndedSlot {
  permits: Permit[];
  releaseKey: (() => Promise<void>) | undefined;
}

/** Adopts a running job into its key's limit; undefined when the task has none (any more). */
export type AdoptKey = (job: Job<NodeJobData>) => Promise<(() => Promise<void>) | undefined>;

/**
 * The limits each running job counts against. A `concurrency`, `pool` or `max_concurrency` added
 * while jobs of a task run would otherwise count only the attempts started after it, letting the
 * task run over the new limit for as long as the earlier ones last.
 */
export class RunningSlots {
  private readonly slots = new Set<Slot>();

  begin(task: string, job: Job<NodeJobData>, permit: Permit | undefined, keyed: boolean): Slot {
    const slot: Slot = { task, job, holds: new Set(permit?.spec.semaphores.map((s) => s.key)), adopted: [], keyed, ended: false };
    this.slots.add(slot);
    return slot;
  }

  /** The permits adopted for the slot, to release with its own, and the release of a key adopted since. */
  end(slot: Slot): EndedSlot {
    this.slots.delete(slot);
    slot.ended = true;
    return { permits: slot.adopted, releaseKey: slot.releaseKey };
  }

  /** Adopts every running job into the semaphores its task's limits have gained; the gate's next renew takes them. */
  adoptAddedLimits(limitsOf: (task: string) => LimitSpec | Unsatisfiable, gate: LimitGate): void {
    for (const slot of this.slots) {
      const spec = limitsOf(slot.task);
      if ("reason" in spec) continue;
      const added = spec.semaphores.filter((s) => !slot.holds.has(s.key));
      if (added.length === 0) continue;
      slot.adopted.push(gate.adopt(added));
      for (const s of added) slot.holds.add(s.key);
    }
  }

  /**
   * Adopts every running job of a task that has gained a limit per business key into its key's
   * slot. The key is read off the job's inputs, so this goes to PostgreSQL once per such job.
   * Resolves with how many were adopted, once every read has ended.
   */
  async adoptAddedKeys(hasKeyLimit: (task: string) => boolean, adopt: AdoptKey, onError: (err: unknown) => void): Promise<number> {
    const adopting = [...this.slots]
      .filter((slot) => !slot.keyed && hasKeyLimit(slot.task))
      .map(async (slot) => {
        slot.keyed = true;
        try {
          const release = await adopt(slot.job);
          // The job ended while its key was read: nothing runs under it any more.
          if (slot.ended) void release?.().catch(onError);
          else slot.releaseKey = release;
          return release !== undefined;
        } catch (err) {
          slot.keyed = false;
          onError(err);
          return false;
        }
      });
    return (await Promise.all(adopting)).filter(Boolean).length;
  }
}
