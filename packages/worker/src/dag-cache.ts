import { flowVersionById, type Db, type DagNode, type FlowDag } from "@ax/store";

export interface CachedDag {
  versionId: number;
  dag: FlowDag;
  nodes: Map<string, DagNode>;
}

/** Flow versions never change once stored, so each is read from PostgreSQL once per process. */
export class DagCache {
  private readonly cache = new Map<number, Promise<CachedDag>>();

  constructor(private readonly db: Db) {}

  get(flowVersionId: number): Promise<CachedDag> {
    let entry = this.cache.get(flowVersionId);
    if (!entry) {
      entry = flowVersionById(this.db, flowVersionId).then((version) => {
        if (!version) throw new Error(`flow version ${flowVersionId} is not in the store`);
        return { versionId: flowVersionId, dag: version.dag, nodes: new Map(version.dag.nodes.map((n) => [n.key, n])) };
      });
      entry.catch(() => this.cache.delete(flowVersionId));
      this.cache.set(flowVersionId, entry);
    }
    return entry;
  }
}
