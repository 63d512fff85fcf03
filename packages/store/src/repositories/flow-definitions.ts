import { and, desc, eq, sql } from "drizzle-orm";
import type { Db } from "../connect.js";
import type { FlowDag } from "../dag.js";
import { flowDefinitions } from "../schema/index.js";
import { lockKey } from "./raw.js";

export interface FlowVersion {
  id: number;
  name: string;
  version: number;
  dag: FlowDag;
}

/**
 * Stores `dag` as the next version of its flow unless an identical one (same hash) exists, and
 * makes it the flow's current version. An identical older one becomes current again: the process
 * registering it runs that code (a rollback), so new runs must get the graph its workers run.
 */
export async function registerFlowVersion(db: Db, dag: FlowDag, hash: string): Promise<FlowVersion> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(${lockKey(`ax.flow:${dag.flow}`)})`);
    const [existing] = await tx
      .select()
      .from(flowDefinitions)
      .where(and(eq(flowDefinitions.name, dag.flow), eq(flowDefinitions.hash, hash)));
    if (existing) {
      if ((await currentFlowVersion(tx, dag.flow, { retired: true }))?.id === existing.id) return existing;
      const [again] = await tx
        .update(flowDefinitions)
        .set({ registeredAt: sql`now()` })
        .where(eq(flowDefinitions.id, existing.id))
        .returning();
      return again!;
    }
    const [last] = await tx
      .select({ version: flowDefinitions.version })
      .from(flowDefinitions)
      .where(eq(flowDefinitions.name, dag.flow))
      .orderBy(desc(flowDefinitions.version))
      .limit(1);
    const [row] = await tx
      .insert(flowDefinitions)
      .values({ name: dag.flow, version: (last?.version ?? 0) + 1, hash, dag })
      .returning();
    return row!;
  });
}

/** A flow `ax flow retire` took out of use: no registered flow as triggers, lists and config see it. */
export const notRetired = sql`not exists (select 1 from flow_settings s where s.flow = ${flowDefinitions.name} and s.retired_at is not null)`;

/**
 * The version new runs of `name` get: the one registered last (see `registerFlowVersion`).
 * Undefined for a retired flow unless `retired` (its graph, to read its runs).
 */
export async function currentFlowVersion(db: Db, name: string, options: { retired?: boolean } = {}): Promise<FlowVersion | undefined> {
  const [row] = await db
    .select()
    .from(flowDefinitions)
    .where(and(eq(flowDefinitions.name, name), options.retired ? undefined : notRetired))
    .orderBy(desc(flowDefinitions.registeredAt), desc(flowDefinitions.version))
    .limit(1);
  return row;
}

export async function flowVersionById(db: Db, id: number): Promise<FlowVersion | undefined> {
  const [row] = await db.select().from(flowDefinitions).where(eq(flowDefinitions.id, id));
  return row;
}

/** The flows in use: every registered one but those retired. */
export async function listFlowNames(db: Db): Promise<string[]> {
  const rows = await db
    .selectDistinct({ name: flowDefinitions.name })
    .from(flowDefinitions)
    .where(notRetired)
    .orderBy(flowDefinitions.name);
  return rows.map((r) => r.name);
}

export interface FlowVersionSummary {
  version: number;
  createdAt: string;
  nodes: number;
}

/** A flow's stored DAG versions, newest first. */
export async function listFlowVersions(db: Db, name: string): Promise<FlowVersionSummary[]> {
  const found = await db
    .select({ version: flowDefinitions.version, createdAt: flowDefinitions.createdAt, dag: flowDefinitions.dag })
    .from(flowDefinitions)
    .where(eq(flowDefinitions.name, name))
    .orderBy(desc(flowDefinitions.version));
  return found.map((f) => ({ version: f.version, createdAt: f.createdAt.toISOString(), nodes: f.dag.nodes.length }));
}
