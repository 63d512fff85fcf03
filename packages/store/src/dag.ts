import type { Json } from "./types.js";

/** Where a task argument comes from: the run's input, an upstream node's result, or a constant. */
export type DagArg = { kind: "input" } | { kind: "node"; key: string } | { kind: "const"; value: Json };

export interface DagNode {
  /** Unique within the flow: the task name, then `name#2`, `name#3` … for repeated uses. */
  key: string;
  task: string;
  /** BullMQ queue (worker group) the node's jobs go to. */
  queue: string;
  args: DagArg[];
  /** Distinct upstream node keys, in argument order. */
  upstream: string[];
  downstream: string[];
}

/** A flow's graph as traced from its body; stored versioned in `flow_definitions`. */
export interface FlowDag {
  flow: string;
  nodes: DagNode[];
}

/** Every node reachable from `keys` along downstream edges (not including `keys`). */
export function descendantsOf(dag: FlowDag, keys: string[]): string[] {
  const byKey = new Map(dag.nodes.map((n) => [n.key, n]));
  const seen = new Set<string>();
  const stack = [...keys];
  while (stack.length > 0) {
    const node = byKey.get(stack.pop()!);
    for (const d of node?.downstream ?? []) {
      if (!seen.has(d)) {
        seen.add(d);
        stack.push(d);
      }
    }
  }
  return [...seen];
}
