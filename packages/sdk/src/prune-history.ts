import { AxRetentionError } from "@ax/common";
import { countPrunable, prune, type PruneCounts, type PruneResult, type Store } from "@ax/store";
import type { PruneRequest } from "./client-types.js";
import { retentionMs } from "./config/runtime-config.js";

/**
 * `Client.prune` and the API's `POST /api/history/prune`: the history older than
 * `olderThan` (checked here, at least 1h), or with `dryRun` what a prune now would remove.
 */
export async function pruneHistory(store: Store, options: PruneRequest): Promise<PruneResult | (PruneCounts & { dryRun: true })> {
  const parsed = retentionMs.safeParse(options.olderThan);
  if (!parsed.success) throw new AxRetentionError(`olderThan: ${parsed.error.issues[0]!.message}`);
  const cutoff = new Date(Date.now() - parsed.data);
  if (options.dryRun) return { ...(await countPrunable(store.db, cutoff)), dryRun: true };
  const total = options.onProgress ? (await countPrunable(store.db, cutoff)).runs : 0;
  return prune(store, {
    cutoff,
    archive: options.archive,
    batch: options.batch,
    onProgress: options.onProgress && ((runs) => options.onProgress!(runs, total)),
    signal: options.signal,
  });
}
