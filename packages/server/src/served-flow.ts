import type { Json } from "@ax/store";
import { AxKeyFunctionError, returnedKey } from "@ax/common";

/** What the API knows of a flow from its code (`ax server <entry>`, a Runtime's api role). */
export interface ServedFlow {
  name: string;
  idempotencyKey?: ((payload: any) => string) | undefined;
  businessKey?: ((payload: any) => string) | undefined;
  /** The flow's options as JSON (functions left out). */
  options: Record<string, Json>;
  schedule: string | { cron: string; timezone?: string | undefined } | null;
}

/** The keys a trigger gets: those in the request win, else the flow's own functions. */
export function triggerKeys(
  flow: ServedFlow | undefined,
  payload: unknown,
  given: { idempotencyKey?: string | undefined; businessKey?: string | undefined },
  /** What to tell the caller whose payload a key function refused. */
  remedy?: string,
): { idempotencyKey: string | undefined; businessKey: string | undefined } {
  return {
    idempotencyKey: flowKey(flow, "idempotencyKey", payload, given.idempotencyKey, remedy),
    businessKey: flowKey(flow, "businessKey", payload, given.businessKey, remedy),
  };
}

/** One key: the request's when given, else the flow's function of the payload (undefined without one). */
export function flowKey(
  flow: ServedFlow | undefined,
  which: "idempotencyKey" | "businessKey",
  payload: unknown,
  given: string | undefined,
  remedy?: string,
): string | undefined {
  if (given !== undefined) return given;
  const fn = flow?.[which];
  if (!fn) return undefined;
  let returned: unknown;
  try {
    returned = fn(payload);
  } catch (error) {
    throw new AxKeyFunctionError(flow.name, which, error, remedy);
  }
  const { key, refused } = returnedKey(returned);
  if (refused !== undefined) throw new AxKeyFunctionError(flow.name, which, new Error(`it ${refused}`), remedy);
  return key;
}
