import dagre from "@dagrejs/dagre";
import { Background, Controls, Handle, type Node, type NodeProps, Position, ReactFlow, type Edge } from "@xyflow/react";
import { useMemo } from "react";
import "@xyflow/react/dist/style.css";

export interface DagNode {
  key: string;
  task: string;
  upstream: string[];
  /** Absent on a flow's DAG (no run). */
  status?: string;
  /** A line under the task: countdown, progress, waitingFor. */
  detail?: string;
}

const WIDTH = 200;
const HEIGHT = 64;

type Data = { node: DagNode; selected: boolean };

function TaskNode({ data }: NodeProps<Node<Data>>) {
  const { node, selected } = data;
  return (
    <div className={`dag-node s-${node.status ?? "none"}${selected ? " selected" : ""}`} data-node={node.key} data-status={node.status}>
      <Handle type="target" position={Position.Left} />
      <div className="dag-key">
        <span className="dot" />
        {node.key}
      </div>
      <div className="dag-detail">{node.detail ?? (node.task !== node.key ? node.task : (node.status ?? ""))}</div>
      <Handle type="source" position={Position.Right} />
    </div>
  );
}

const nodeTypes = { task: TaskNode };

/** Left-to-right layout by dagre: upstream nodes left of their dependants. */
function layout(nodes: DagNode[]): Map<string, { x: number; y: number }> {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: "LR", nodesep: 28, ranksep: 64 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of nodes) g.setNode(n.key, { width: WIDTH, height: HEIGHT });
  for (const n of nodes) for (const up of n.upstream) g.setEdge(up, n.key);
  dagre.layout(g);
  return new Map(nodes.map((n) => [n.key, { x: g.node(n.key).x - WIDTH / 2, y: g.node(n.key).y - HEIGHT / 2 }]));
}

export function Dag({
  nodes,
  selected,
  onSelect,
  height = 320,
}: {
  nodes: DagNode[];
  selected?: string | undefined;
  onSelect?: (key: string) => void;
  height?: number;
}) {
  const shape = nodes.map((n) => `${n.key}<${n.upstream.join(",")}`).join(";");
  // biome-ignore lint/correctness/useExhaustiveDependencies: the layout changes with the DAG's shape only, not with states
  const positions = useMemo(() => layout(nodes), [shape]);
  const flowNodes: Node<Data>[] = nodes.map((n) => ({
    id: n.key,
    type: "task",
    position: positions.get(n.key) ?? { x: 0, y: 0 },
    // Fixed size, known up front: React Flow rebuilds a node whose object changed (every state
    // update here) and hides it until measured again unless its dimensions are given.
    width: WIDTH,
    height: HEIGHT,
    measured: { width: WIDTH, height: HEIGHT },
    data: { node: n, selected: n.key === selected },
    draggable: false,
  }));
  const byKey = new Map(nodes.map((n) => [n.key, n]));
  const edges: Edge[] = nodes.flatMap((n) =>
    n.upstream.map((up) => ({
      id: `${up}->${n.key}`,
      source: up,
      target: n.key,
      animated: n.status === "running" || (byKey.get(up)?.status === "success" && n.status === "queued"),
      className: `edge-${byKey.get(up)?.status ?? "none"}`,
    })),
  );
  return (
    <div className="dag" style={{ height }}>
      <ReactFlow
        nodes={flowNodes}
        edges={edges}
        nodeTypes={nodeTypes}
        fitView
        fitViewOptions={{ padding: 0.2, maxZoom: 1.1 }}
        nodesConnectable={false}
        proOptions={{ hideAttribution: true }}
        onNodeClick={(_, node) => onSelect?.(node.id)}
        minZoom={0.3}
      >
        <Background gap={18} size={1} color="#e2e8f0" />
        <Controls showInteractive={false} />
      </ReactFlow>
    </div>
  );
}
