import type { Triggered, TriggerRequest } from "@ax/coordinator";
import { REUSED_KEY_CODE, reusedKeyMessage } from "@ax/common";
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
  const message = reusedKeyMessage({ flow: first.request.flow, key: first.request.idempotencyKey ?? "", runId: first.run }, reused.length);
  if (log) log.warn({ code: REUSED_KEY_CODE, runId: first.run, count: reused.length }, message);
  else process.emitWarning(message, { type: "AxWarning", code: REUSED_KEY_CODE });
}
