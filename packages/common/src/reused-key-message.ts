/** The code of the warning below, in logs and process warnings alike. */
export const REUSED_KEY_CODE = "AX_IDEMPOTENCY_KEY_REUSED";

/**
 * The warning for triggers whose idempotency key found a run made with another payload: that run
 * stands and their payload is not used. One text whichever way the trigger went (a Client on the
 * store, or the CLI through an `ax dev`'s API).
 */
export function reusedKeyMessage(first: { flow: string; key: string; runId: string }, count = 1): string {
  const which = `idempotency key "${first.key}" of flow "${first.flow}" already made run ${first.runId}`;
  return (
    (count === 1
      ? `${which}, with another payload`
      : `${count} triggers' idempotency keys found runs with other payloads (first: ${which})`) +
    ": that run stands and this payload is not used. If the events differ, give them different keys."
  );
}
