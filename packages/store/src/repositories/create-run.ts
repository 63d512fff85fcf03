import { and, eq } from "drizzle-orm";
import type { Db } from "../connect.js";
import type { FlowVersion } from "./flow-definitions.js";
import { idempotencyKeys, nodeRuns, runs } from "../schema/index.js";
import type { Json, RunTrigger } from "../types.js";
import type { ReadyNode } from "./ready-node.js";

export interface NewRun {
  id: string;
  flow: FlowVersion;
  trigger: RunTrigger;
  payload: Json;
  businessKey?: string | null | undefined;
  idempotencyKey?: string | null | undefined;
  logicalDate?: Date | null | undefined;
  rerunOf?: string | null | undefined;
}

export type CreatedRun = { created: true; runId: string; ready: ReadyNode[] } | { created: false; runId: string };

const UNIQUE_VIOLATION = "23505";

/**
 * Writes the run and all its node rows in one transaction; nodes without upstream are `queued`.
 * An idempotency key already used for the flow returns that run and writes nothing.
 */
export async function createRun(db: Db, run: NewRun): Promise<CreatedRun> {
  const key = run.idempotencyKey ?? null;
  if (key !== null) {
    const existing = await runForKey(db, run.flow.name, key);
    if (existing) return { created: false, runId: existing };
  }
  try {
    return await insertRun(db, run);
  } catch (error) {
    // Two triggers with one key raced: the loser's transaction rolled back, the winner's run stands.
    if (key !== null && (error as { code?: string }).code === UNIQUE_VIOLATION) {
      const existing = await runForKey(db, run.flow.name, key);
      if (existing) return { created: false, runId: existing };
    }
    throw error;
  }
}

async function runForKey(db: Db, flow: string, key: string): Promise<string | undefined> {
  const [row] = await db
    .select({ runId: idempotencyKeys.runId })
    .from(idempotencyKeys)
    .where(and(eq(idempotencyKeys.flow, flow), eq(idempotencyKeys.key, key)));
  return row?.runId;
}

async function insertRun(db: Db, run: NewRun): Promise<CreatedRun> {
  const now = new Date();
  const nodes = run.flow.dag.nodes;
  await db.transaction(async (tx) => {
    await tx.insert(runs).values({
      id: run.id,
      flow: run.flow.name,
      flowVersionId: run.flow.id,
      status: "pending",
      trigger: run.trigger,
      payload: run.payload,
      businessKey: run.businessKey ?? null,
      idempotencyKey: run.idempotencyKey ?? null,
      logicalDate: run.logicalDate ?? null,
      rerunOf: run.rerunOf ?? null,
      nodesRemaining: nodes.length,
      createdAt: now,
    });
    if (run.idempotencyKey) {
      await tx.insert(idempotencyKeys).values({ flow: run.flow.name, key: run.idempotencyKey, runId: run.id });
    }
    await tx.insert(nodeRuns).values(
      nodes.map((node) => {
        const ready = node.upstream.length === 0;
        return {
          runId: run.id,
          nodeKey: node.key,
          task: node.task,
          queue: node.queue,
          status: ready ? ("queued" as const) : ("pending" as const),
          depsRemaining: node.upstream.length,
          attempt: ready ? 1 : 0,
          queuedAt: ready ? now : null,
        };
      }),
    );
  });
  const ready = nodes
    .filter((n) => n.upstream.length === 0)
    .map((n) => ({ runId: run.id, nodeKey: n.key, task: n.task, queue: n.queue, attempt: 1, flowVersionId: run.flow.id }));
  return { created: true, runId: run.id, ready };
}
