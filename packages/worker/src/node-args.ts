import type { DagNode, Json } from "@ax/store";

/** A node's arguments: the run's payload, constants, and its upstream nodes' results, in DAG order. */
export function nodeArgs(node: DagNode, payload: Json, upstream: Record<string, Json>): Json[] {
  return node.args.map((arg): Json => (arg.kind === "input" ? payload : arg.kind === "const" ? arg.value : (upstream[arg.key] ?? null)));
}
