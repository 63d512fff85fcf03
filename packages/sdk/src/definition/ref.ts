import { AxDefinitionError } from "@ax/common";
import type { FlowBuilder } from "./flow-builder.js";

/**
 * A symbolic value inside a flow body: the flow's input or a task's future result. Passing it to
 * another task records an edge; it holds no data.
 */
export class Ref<T = unknown> {
  /** Never set: carries `T` for type inference only. */
  declare readonly __type?: T;

  constructor(
    /** `"input"` or the producing node's key. */
    readonly source: "input" | { node: string },
    readonly builder: FlowBuilder,
  ) {
    // `{ ...ref }`, Object.keys(ref), for…in: the Ref's own fields would be copied into the graph as
    // if they were the task's result. Listing its keys is refused instead.
    // biome-ignore lint/correctness/noConstructorReturn: the Ref is its own proxy, so every reference to it is guarded
    return new Proxy(this, {
      ownKeys: (target) => {
        throw new AxDefinitionError(
          `${target.where()} has no fields while flow "${target.builder.flow}" is traced: spreading it ({ ...ref }), Object.keys/entries ` +
            "or for…in on it would put the Ref's own insides in the graph. Pass the Ref itself to a task and read its fields inside the task.",
        );
      },
    });
  }

  toJSON(): never {
    throw new AxDefinitionError(
      `${this.where()} is a placeholder in a flow body, not data: pass it to a task as an argument of its own instead of serialising it`,
    );
  }

  /** `${ref}`, `ref + 1`, `ref > 100`: there is no value yet, so the graph would hold "[object Object]" or a branch never taken. */
  [Symbol.toPrimitive](): never {
    throw new AxDefinitionError(
      `${this.where()} has no value while flow "${this.builder.flow}" is traced: a template string, arithmetic or a comparison on it ` +
        "would be decided once, now, with no data. Pass the Ref to a task and build the text or make the decision inside the task.",
    );
  }

  /** `[...ref]`, `for (const x of ref)`: a task's result is not a list while the flow is traced. */
  [Symbol.iterator](): never {
    throw new AxDefinitionError(
      `${this.where()} cannot be spread or iterated while flow "${this.builder.flow}" is traced: it has no items yet. Pass the Ref itself to a task and loop inside the task.`,
    );
  }

  /** How messages name this Ref. */
  where(): string {
    return this.source === "input" ? `the input of flow "${this.builder.flow}"` : `the result of node "${this.source.node}" (a Ref)`;
  }
}

/** A task argument in a flow body: the value itself, or a Ref to where it will come from. */
export type RefOr<T> = T | Ref<T>;
export type RefArgs<A extends unknown[]> = { [K in keyof A]: RefOr<A[K]> };
