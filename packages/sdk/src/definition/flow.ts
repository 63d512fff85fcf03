import { createHash } from "node:crypto";
import type { FlowDag } from "@ax/store";
import { flowOptionsSchema, type FlowOptions } from "../flow-options.js";
import { formatIssues } from "../option-checks.js";
import { FlowBuilder, trace } from "./flow-builder.js";
import { Ref } from "./ref.js";
import type { AnyTask } from "./task.js";
import { AxDefinitionError } from "@ax/common";

/** A flow: its options and the DAG traced from its body once, at definition. */
export interface Flow<Input = unknown> {
  readonly name: string;
  readonly options: FlowOptions<Input>;
  readonly dag: FlowDag;
  /** The distinct tasks the flow uses, by name. */
  readonly tasks: ReadonlyMap<string, AnyTask>;
}

/** The payload type a trigger of `F` passes (`any` for a flow whose input is not typed). */
export type FlowInput<F> = F extends Flow<infer Input> ? Input : never;

/**
 * `Input` is the payload type a trigger passes. It is inferred from a typed `idempotencyKey` or
 * `businessKey`, or given as `ax.flow<PaymentEvent>(...)`; otherwise it is `any`, so an untyped
 * body parameter can be passed to any task: the payload is only checked as JSON at trigger time.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function defineFlow<Input = any>(options: FlowOptions<Input>, body: (input: Ref<Input>) => unknown): Flow<Input> {
  const parsed = flowOptionsSchema.safeParse(options);
  if (!parsed.success) {
    const name = typeof options?.name === "string" ? `"${options.name}"` : "(unnamed)";
    throw new AxDefinitionError(`flow ${name} has invalid options: ${formatIssues(parsed.error, Object.keys(flowOptionsSchema.shape))}`);
  }
  if (typeof body !== "function") throw new AxDefinitionError(`flow "${options.name}" needs a body function as its second argument`);
  const builder = new FlowBuilder(options.name);
  trace(builder, () => body(new Ref<Input>("input", builder)));
  return { name: options.name, options, dag: builder.build(), tasks: builder.tasks };
}

/** Identifies a DAG's shape: a changed flow is stored as a new version. */
export function dagHash(dag: FlowDag): string {
  return createHash("sha256").update(JSON.stringify(dag)).digest("hex").slice(0, 32);
}
