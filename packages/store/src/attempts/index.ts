/**
 * The attempt state machine: one module per transition, each with its single and batched forms.
 * The batched forms let many attempts starting or finishing at once share one statement and one
 * commit (group commit) instead of paying a commit each. Every transition that ends nodes counts
 * its run down with `finishRunsSql`, and every multi-row write of a run locks in `lockRuns` order.
 */
export * from "./types.js";
export { lockRuns, type LockedRun } from "./lock-order.js";
export { startAttempts } from "./start.js";
export { reclaimLostStart } from "./reclaim.js";
export { completeAttempts } from "./complete.js";
export { retryAttempt } from "./retry.js";
export { failNode } from "./fail.js";
export { abandonAttempt, handBackAttempts } from "./crash.js";
export { cancelledRunIds, cancelRunRecords } from "./cancel.js";
export {
  crashedAttempts,
  unchargedAttempts,
  firstFailedNode,
  inspectAttempt,
  nodeWaiting,
  recordProgress,
  runningAttemptsOf,
  takenOverAttempts,
} from "./inspect.js";
export { nodeInputsAnyStatus, waitingNodeInputs, type InputRequest, type NodeInputs } from "./inputs.js";
