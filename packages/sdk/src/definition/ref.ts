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
  ) {}

  toJSON(): never {
    throw new Error("a Ref is a placeholder in a flow body, not data: pass it to a task instead of serialising it");
  }
}

/** A task argument in a flow body: the value itself, or a Ref to where it will come from. */
export type RefOr<T> = T | Ref<T>;
export type RefArgs<A extends unknown[]> = { [K in keyof A]: RefOr<A[K]> };
