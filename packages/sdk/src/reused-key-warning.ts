import type { Triggered, TriggerRequest } from "@ax/coordinator";
import type { Logger } from "pino";

/**
 * Warns of triggers whose idempotency key found a run with another payload: that run stands, and
 * their payload is not used (a key is for repeats of one event). One warning per call, to the
 * client's logger when it has one, else as a process warning (as the unkeyed-flow warning).
 */
export function warnReusedKeys(requests: TriggerRequest[], triggered: Triggered[], log?: Logger): void {
  const reused = triggered.flatMap((t, i) => (t.samePayload === false ? [{ run: t.runId, request: requests[i]! }] : []));
  const [first] = reused;
  if (!first) return;
  const which = `idempotency key "${first.request.idempotencyKey}" of flow "${first.request.flow}" already made run ${first.run}`;
  const message =
    (reused.length === 1
      ? `${which}, with another payload`
      : `${reused.length} triggers' idempotency keys found runs with other payloads (first: ${which})`) +
    ": that run stands and this payload is not used. If the events differ, give them different keys.";
  if (log) log.warn({ code: "AX_IDEMPOTENCY_KEY_REUSED", runId: first.run, count: reused.length }, message);
  else process.emitWarning(message, { type: "AxWarning", code: "AX_IDEMPOTENCY_KEY_REUSED" });
}
