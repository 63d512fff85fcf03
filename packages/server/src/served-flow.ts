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
  const apply = (which: "idempotencyKey" | "businessKey"): string | undefined => {
    if (given[which] !== undefined) return given[which];
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
  };
  return { idempotencyKey: apply("idempotencyKey"), businessKey: apply("businessKey") };
}
