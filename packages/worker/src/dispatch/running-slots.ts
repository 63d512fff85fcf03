import type { LimitGate, LimitSpec, Permit } from "@ax/coordinator";
import type { Unsatisfiable } from "./limit-spec.js";

interface Slot {
  task: string;
  /** Semaphore keys the job counts against: its permit's, and those adopted since. */
  holds: Set<string>;
  adopted: Permit[];
}

/**
 * The limits each running job counts against. A `concurrency`, `pool` or `max_concurrency` added
 * while jobs of a task run would otherwise count only the attempts started after it, letting the
 * task run over the new limit for as long as the earlier ones last.
 */
export class RunningSlots {
  private readonly slots = new Set<Slot>();

  begin(task: string, permit: Permit | undefined): Slot {
    const slot: Slot = { task, holds: new Set(permit?.spec.semaphores.map((s) => s.key)), adopted: [] };
    this.slots.add(slot);
    return slot;
  }

  /** The permits adopted for the slot, to release with its own. */
  end(slot: Slot): Permit[] {
    this.slots.delete(slot);
    return slot.adopted;
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
}
