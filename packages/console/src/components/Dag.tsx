import dagre from "@dagrejs/dagre";
import {
  Background,
  BaseEdge,
  Controls,
  type Edge,
  type EdgeProps,
  getBezierPath,
  Handle,
  type Node,
  type NodeProps,
  Position,
  ReactFlow,
} from "@xyflow/react";
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

interface Point {
  x: number;
  y: number;
}

type Routed = Edge<{ via: Point[] }>;

/**
 * An edge through the points dagre routed it by. An edge that skips a column would otherwise be
 * drawn straight from handle to handle, across the nodes of the columns it skips (in the
 * article's flow, parse_payment -> send_notification through create_invoice). Each stretch is a
 * curve leaving and arriving level, as React Flow draws an edge between neighbouring columns.
 */
function RoutedEdge({ id, sourceX, sourceY, targetX, targetY, data }: EdgeProps<Routed>) {
  const via = data?.via ?? [];
  if (via.length === 0) {
    const [path] = getBezierPath({ sourceX, sourceY, targetX, targetY, sourcePosition: Position.Right, targetPosition: Position.Left });
    return <BaseEdge id={id} path={path} />;
  }
  const points = [{ x: sourceX, y: sourceY }, ...via, { x: targetX, y: targetY }];
  const stretches = points.slice(1).map((to, i) => {
    const from = points[i]!;
    const half = (to.x - from.x) / 2;
    return `C ${from.x + half},${from.y} ${to.x - half},${to.y} ${to.x},${to.y}`;
  });
  return <BaseEdge id={id} path={`M ${sourceX},${sourceY} ${stretches.join(" ")}`} />;
}

const edgeTypes = { routed: RoutedEdge };

interface Layout {
  positions: Map<string, Point>;
  /** Per edge `up->key` that skips a column, the points between its ends that dagre routed it by. */
  routes: Map<string, Point[]>;
}

/** Left-to-right layout by dagre: upstream nodes left of their dependants. */
function layout(nodes: DagNode[]): Layout {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: "LR", nodesep: 28, ranksep: 64 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of nodes) g.setNode(n.key, { width: WIDTH, height: HEIGHT });
  for (const n of nodes) for (const up of n.upstream) g.setEdge(up, n.key);
  dagre.layout(g);
  const centre = (key: string): Point => g.node(key);
  const columns = [...new Set(nodes.map((n) => centre(n.key).x))];
  const routes = new Map<string, Point[]>();
  for (const n of nodes) {
    for (const up of n.upstream) {
      const [from, to] = [centre(up).x, centre(n.key).x];
      if (!columns.some((x) => x > from && x < to)) continue;
      // dagre's first and last points lie on the nodes' borders; the handles replace them.
      routes.set(`${up}->${n.key}`, g.edge(up, n.key).points.slice(1, -1));
    }
  }
  const positions = new Map(nodes.map((n) => [n.key, { x: centre(n.key).x - WIDTH / 2, y: centre(n.key).y - HEIGHT / 2 }]));
  return { positions, routes };
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
  const { positions, routes } = useMemo(() => layout(nodes), [shape]);
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
  const edges: Routed[] = nodes.flatMap((n) =>
    n.upstream.map((up) => ({
      id: `${up}->${n.key}`,
      type: "routed",
      data: { via: routes.get(`${up}->${n.key}`) ?? [] },
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
        edgeTypes={edgeTypes}
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
