import type { Json } from "@ax/store";
import type { ServedFlow } from "@ax/server";
import type { Flow } from "./definition/flow.js";

/**
 * What the API serves of each flow: its key functions (applied to HTTP triggers) and its options
 * as JSON, with the YAML overrides this process loaded.
 */
export function servedFlows(flows: Flow<any>[], overrides: Record<string, Record<string, unknown>>): ServedFlow[] {
  return flows.map((flow) => {
    const merged: Record<string, unknown> = { ...flow.options, ...overrides[flow.name] };
    const options = Object.fromEntries(
      // A YAML null removed the option.
      Object.entries(merged).filter(([, value]) => value !== undefined && value !== null && typeof value !== "function"),
    ) as Record<string, Json>;
    return {
      name: flow.name,
      idempotencyKey: flow.options.idempotencyKey,
      businessKey: flow.options.businessKey,
      options,
      schedule: (options.schedule as ServedFlow["schedule"] | undefined) ?? null,
    };
  });
}
