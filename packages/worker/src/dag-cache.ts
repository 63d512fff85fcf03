import { flowVersionById, type Db, type DagNode, type FlowDag } from "@ax/store";

export interface CachedDag {
  versionId: number;
  dag: FlowDag;
  nodes: Map<string, DagNode>;
}

/** Flow versions never change once stored, so each is read from PostgreSQL once per process. */
export class DagCache {
  private readonly cache = new Map<number, Promise<CachedDag | undefined>>();

  constructor(private readonly db: Db) {}

  async get(flowVersionId: number): Promise<CachedDag> {
    const found = await this.find(flowVersionId);
    if (!found) throw new Error(`flow version ${flowVersionId} is not in the store`);
    return found;
  }

  /** The version, or undefined when this history has none of that id (a job of another cluster's). */
  find(flowVersionId: number): Promise<CachedDag | undefined> {
    let entry = this.cache.get(flowVersionId);
    if (!entry) {
      entry = flowVersionById(this.db, flowVersionId).then((version) => {
        if (!version) return undefined;
        return { versionId: flowVersionId, dag: version.dag, nodes: new Map(version.dag.nodes.map((n) => [n.key, n])) };
      });
      // Ids are a sequence: one missing now may name a version registered later, so neither an absence nor an error is kept.
      const forget = () => this.cache.delete(flowVersionId);
      entry.then((found) => {
        if (!found) forget();
      }, forget);
      this.cache.set(flowVersionId, entry);
    }
    return entry;
  }
}
