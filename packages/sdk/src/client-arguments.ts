import type { z } from "zod";
import { AxArgumentError } from "@ax/common";
import type { Flow } from "./definition/flow.js";
import type { FlowOptions } from "./flow-options.js";
import { checkOptions, shown } from "./option-checks.js";
import { flowNameSchema } from "./client-options.js";

/** A method's arguments, checked before anything is read or written. */
export function checkArgs<S extends z.ZodType>(schema: S, value: unknown, method: string): z.output<S> {
  return checkOptions(schema, value, (problems) => new AxArgumentError(`${method}: ${problems}`));
}

/** A `triggerFlows` key option bound to one payload's index. */
export function perPayload(fn: ((payload: any, index: number) => unknown) | undefined, index: number) {
  return fn && ((payload: unknown) => fn(payload, index));
}

/** A flow's name and options: a Flow object brings its own key functions, a name those of the client's `flows`. */
export function flowOf(
  flow: string | Flow<any>,
  method: string,
  known: ReadonlyMap<string, Flow<any>>,
): [string, FlowOptions<any> | undefined] {
  if (typeof flow === "string") return [checkArgs(flowNameSchema, flow, method), known.get(flow)?.options];
  if (flow && typeof flow === "object" && typeof flow.name === "string" && "dag" in flow) return [flow.name, flow.options];
  throw new AxArgumentError(`${method}: flow must be a flow's name or the flow ax.flow returned, got ${shown(flow)}`);
}
