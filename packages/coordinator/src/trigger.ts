import { randomUUID } from "node:crypto";
import {
  assertJson,
  createRun,
  jsonBytes,
  latestFlowVersion,
  listFlowNames,
  type Db,
  type FlowVersion,
  type RunTrigger,
} from "@ax/store";
import { enqueueNodes } from "./enqueue.js";
import { AxPayloadTooLargeError, AxUnknownFlowError } from "./errors.js";
import type { QueueRegistry } from "./queues.js";

export const DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024;

export interface TriggerRequest {
  flow: string;
  payload: unknown;
  trigger?: RunTrigger;
  idempotencyKey?: string | null | undefined;
  businessKey?: string | null | undefined;
  logicalDate?: Date | null | undefined;
  rerunOf?: string | null | undefined;
}

export interface TriggerDeps {
  db: Db;
  queues: QueueRegistry;
  maxPayloadBytes?: number;
  /** Looks up the flow's current version; callers may cache. */
  resolveFlow?: (name: string) => Promise<FlowVersion | undefined>;
}

export interface Triggered {
  runId: string;
  /** False when the idempotency key pointed at an existing run. */
  created: boolean;
}

/**
 * Validates the request, writes run + node rows in one transaction, then enqueues the ready
 * nodes. Bad input is refused before anything is written.
 */
export async function triggerRun(deps: TriggerDeps, request: TriggerRequest): Promise<Triggered> {
  const payload = request.payload === undefined ? null : request.payload;
  assertJson(payload, "payload");
  const limit = deps.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  const bytes = jsonBytes(payload);
  if (bytes > limit) throw new AxPayloadTooLargeError(bytes, limit);
  const flow = await (deps.resolveFlow ?? ((name) => latestFlowVersion(deps.db, name)))(request.flow);
  if (!flow) throw new AxUnknownFlowError(request.flow, await listFlowNames(deps.db));
  const created = await createRun(deps.db, {
    id: randomUUID(),
    flow,
    trigger: request.trigger ?? "manual",
    payload,
    businessKey: request.businessKey,
    idempotencyKey: request.idempotencyKey,
    logicalDate: request.logicalDate,
    rerunOf: request.rerunOf,
  });
  if (!created.created) return { runId: created.runId, created: false };
  await enqueueNodes(deps.queues, created.ready);
  return { runId: created.runId, created: true };
}
