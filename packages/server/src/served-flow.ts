import type { Json } from "@ax/store";
import { AxKeyFunctionError } from "@ax/common";
import { MAX_KEY_LENGTH } from "@ax/common";

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
): { idempotencyKey: string | undefined; businessKey: string | undefined } {
  const apply = (which: "idempotencyKey" | "businessKey"): string | undefined => {
    if (given[which] !== undefined) return given[which];
    const fn = flow?.[which];
    if (!fn) return undefined;
    let returned: unknown;
    try {
      returned = fn(payload);
    } catch (error) {
      throw new AxKeyFunctionError(flow.name, which, error);
    }
    // As the Client takes a function's key: text, a number as its text, nothing for no key.
    if (returned === undefined || returned === null) return undefined;
    const key = typeof returned === "number" && Number.isFinite(returned) ? String(returned) : returned;
    const refused = (why: string) => new AxKeyFunctionError(flow.name, which, new Error(why));
    if (typeof key !== "string")
      throw refused(
        `it returned ${Array.isArray(key) ? "an array" : typeof key === "object" ? "an object" : `a ${typeof key}`}; return a string`,
      );
    if (key.length === 0) throw refused("it returned an empty string; return a non-empty key, or undefined for none");
    if (key.length > MAX_KEY_LENGTH) throw refused(`it returned ${key.length} characters; keys are at most ${MAX_KEY_LENGTH}`);
    return key;
  };
  return { idempotencyKey: apply("idempotencyKey"), businessKey: apply("businessKey") };
}
