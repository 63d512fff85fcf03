import {
  Background,
  BaseEdge,
  Controls,
  type Edge,
  type EdgeProps,
  getBezierPath,
  Handle,
  MarkerType,
  type Node,
  type NodeProps,
  Position,
  ReactFlow,
  useReactFlow,
  type Viewport,
} from "@xyflow/react";
import { type KeyboardEvent, type RefObject, useEffect, useMemo, useRef, useState } from "react";
import { type MessageKey, useI18n } from "../i18n";
import "@xyflow/react/dist/style.css";
import { bandColumns, frame, NARROW, stackAcross, stackRows } from "./dag-frame";
import { type DagNode, HEIGHT, layout, nodeWidth, type Point, shortKey, WRAP_OUT } from "./dag-layout";
import type { Stack } from "./dag-stack";

type Data = { node: DagNode; selected: boolean; vertical: boolean; width: number };

function TaskNode({ data }: NodeProps<Node<Data>>) {
  const { node, selected, vertical, width } = data;
  const detail = node.detail ?? (node.task !== node.key ? node.task : (node.status ?? ""));
  return (
    <div
      className={`dag-node s-${node.status ?? "none"}${selected ? " selected" : ""}`}
      data-node={node.key}
      data-status={node.status}
      style={{ width }}
    >
      <Handle type="target" position={vertical ? Position.Top : Position.Left} />
      <div className="dag-key" title={node.key}>
        <span className="dot" />
        <span className="dag-name">{shortKey(node.key, width)}</span>
      </div>
      <div className="dag-detail" title={detail}>
        {detail}
      </div>
      <Handle type="source" position={vertical ? Position.Bottom : Position.Right} />
    </div>
  );
}

type StackData = { label: string; status: string; vertical: boolean };

/** The frame of a stack: drawn under its nodes, with the edges to and from them all ending at it. */
function StackFrame({ data, width, height }: NodeProps<Node<StackData>>) {
  return (
    <div className={`dag-stack s-${data.status}`} data-testid="dag-stack" style={{ width, height }}>
      <Handle type="target" position={data.vertical ? Position.Top : Position.Left} />
      <span className="dag-stack-label">{data.label}</span>
      <Handle type="source" position={data.vertical ? Position.Bottom : Position.Right} />
    </div>
  );
}

const nodeTypes = { task: TaskNode, stack: StackFrame };

/** A stack's status as its frame and edges show it: the one most worth a look among its nodes'. */
const STACK_STATUS = ["failed", "running", "retrying", "queued", "pending", "cancelled", "skipped", "success"];
function stackStatus(stack: Stack, byKey: Map<string, DagNode>): string {
  const statuses = new Set(stack.keys.map((k) => byKey.get(k)?.status));
  return STACK_STATUS.find((s) => statuses.has(s)) ?? "none";
}

type Routed = Edge<{ via: Point[]; vertical: boolean; wrapY?: number | undefined }>;

/** The radius of a returning edge's corners. */
const CORNER = 10;

/**
 * An edge from one band of a folded graph to the next, drawn as a line returns on a page: out of
 * its source to the right, down into the gap under the source's band, back to the left of its
 * target, and down into it.
 */
function wrapPath(sx: number, sy: number, tx: number, ty: number, y: number): string {
  const [right, left] = [sx + WRAP_OUT, tx - WRAP_OUT];
  return [
    `M ${sx},${sy} H ${right - CORNER} Q ${right},${sy} ${right},${sy + CORNER}`,
    `V ${y - CORNER} Q ${right},${y} ${right - CORNER},${y}`,
    `H ${left + CORNER} Q ${left},${y} ${left},${y + CORNER}`,
    `V ${ty - CORNER} Q ${left},${ty} ${left + CORNER},${ty} H ${tx}`,
  ].join(" ");
}

/**
 * An edge through the points dagre routed it by. An edge that skips a column would otherwise be
 * drawn straight from handle to handle, across the nodes of the columns it skips (in the
 * article's flow, parse_payment -> send_notification through create_invoice). Each stretch is a
 * curve leaving and arriving level (upright in a top-to-bottom graph), as React Flow draws an
 * edge between neighbouring columns.
 */
function RoutedEdge({ id, sourceX, sourceY, targetX, targetY, data, markerEnd }: EdgeProps<Routed>) {
  const via = data?.via ?? [];
  const vertical = data?.vertical ?? false;
  if (data?.wrapY !== undefined)
    return <BaseEdge id={id} path={wrapPath(sourceX, sourceY, targetX, targetY, data.wrapY)} markerEnd={markerEnd} />;
  if (via.length === 0) {
    const [sourcePosition, targetPosition] = vertical ? [Position.Bottom, Position.Top] : [Position.Right, Position.Left];
    const [path] = getBezierPath({ sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition });
    return <BaseEdge id={id} path={path} markerEnd={markerEnd} />;
  }
  const points = [{ x: sourceX, y: sourceY }, ...via, { x: targetX, y: targetY }];
  const stretches = points.slice(1).map((to, i) => {
    const from = points[i]!;
    if (vertical) {
      const half = (to.y - from.y) / 2;
      return `C ${from.x},${from.y + half} ${to.x},${to.y - half} ${to.x},${to.y}`;
    }
    const half = (to.x - from.x) / 2;
    return `C ${from.x + half},${from.y} ${to.x - half},${to.y} ${to.x},${to.y}`;
  });
  return <BaseEdge id={id} path={`M ${sourceX},${sourceY} ${stretches.join(" ")}`} markerEnd={markerEnd} />;
}

const edgeTypes = { routed: RoutedEdge };

/** An edge's colour by its upstream's status, as styles.css draws its line; the arrowhead is drawn by React Flow. */
const EDGE_COLOUR = "#b1b1b7";
const EDGE_COLOURS: Record<string, string> = { success: "#86efac", failed: "#fca5a5" };

/** Statuses someone opens a run's page to see: kept in view when the whole graph does not fit. */
const WATCHED = ["failed", "running", "retrying"];

function useBoxWidth(): [RefObject<HTMLDivElement | null>, number, number] {
  const ref = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(0);
  const [windowHeight, setWindowHeight] = useState(window.innerHeight);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const observer = new ResizeObserver(() => setWidth(el.clientWidth));
    observer.observe(el);
    const resized = () => setWindowHeight(window.innerHeight);
    window.addEventListener("resize", resized);
    return () => {
      observer.disconnect();
      window.removeEventListener("resize", resized);
    };
  }, []);
  return [ref, width, windowHeight];
}

/** Moves the viewport to the frame's whenever it changes, until the reader pans or zooms themselves. */
function FrameViewport({ viewport, moved }: { viewport: Viewport; moved: boolean }) {
  const flow = useReactFlow();
  const { x, y, zoom } = viewport;
  useEffect(() => {
    if (!moved) void flow.setViewport({ x, y, zoom });
  }, [flow, x, y, zoom, moved]);
  return null;
}

export function Dag({ nodes, selected, onSelect }: { nodes: DagNode[]; selected?: string | undefined; onSelect?: (key: string) => void }) {
  const { t } = useI18n();
  const shape = nodes.map((n) => `${n.key}<${n.upstream.join(",")}`).join(";");
  const [box, boxWidth, windowHeight] = useBoxWidth();
  const vertical = boxWidth > 0 && boxWidth < NARROW;
  const perBand = bandColumns(boxWidth, nodeWidth(nodes));
  const perColumn = stackRows(windowHeight);
  const perRow = stackAcross(boxWidth, nodeWidth(nodes));
  // biome-ignore lint/correctness/useExhaustiveDependencies: the layout changes with the DAG's shape only, not with states
  const graph = useMemo(() => layout(nodes, vertical, perBand, perColumn, perRow), [shape, vertical, perBand, perColumn, perRow]);
  const { positions, routes, wraps, stacks, nodeWidth: cell } = graph;
  const [moved, setMoved] = useState(false);
  // Zoomed in past the frame (with +): the graph no longer fits, and dragging pans it.
  const [zoomed, setZoomed] = useState(false);
  // Otherwise the graph's first root: the left end of a chain, the stem of a fan-out.
  const watched = nodes.find((n) => WATCHED.includes(n.status ?? "")) ?? nodes.find((n) => n.upstream.length === 0);
  const at = watched && positions.get(watched.key);
  const shown = frame(graph, boxWidth, windowHeight, at && { x: at.x + cell / 2, y: at.y + HEIGHT / 2 });
  const byKey = new Map(nodes.map((n) => [n.key, n]));
  const stackOf = new Map(stacks.flatMap((stack) => stack.keys.map((key) => [key, stack] as const)));
  const frames: Node<StackData>[] = stacks.map((stack) => ({
    id: stack.id,
    type: "stack",
    position: { x: stack.box.x, y: stack.box.y },
    width: stack.box.width,
    height: stack.box.height,
    measured: { width: stack.box.width, height: stack.box.height },
    data: { label: `${stack.keys.length} ${t("flows.nodes")}`, status: stackStatus(stack, byKey), vertical },
    draggable: false,
    selectable: false,
    focusable: false,
  }));
  const tasks: Node<Data>[] = nodes.map((n) => ({
    id: n.key,
    type: "task",
    position: positions.get(n.key) ?? { x: 0, y: 0 },
    // Fixed size, known up front: React Flow rebuilds a node whose object changed (every state
    // update here) and hides it until measured again unless its dimensions are given.
    width: cell,
    height: HEIGHT,
    measured: { width: cell, height: HEIGHT },
    data: { node: n, selected: n.key === selected, vertical, width: cell },
    draggable: false,
    // What a screen reader says on reaching the node by Tab: which node, and how it stands.
    ariaLabel: n.status ? `${n.key}: ${t(`status.${n.status}` as MessageKey)}` : `${n.key}: ${n.detail ?? n.task}`,
    ...(onSelect ? { ariaRole: "button" as const } : {}),
  }));
  // Drawn first, so its nodes lie on top of it.
  const flowNodes: Node[] = [...frames, ...tasks];
  // An end in a stack is its frame: one edge per neighbour, not one per stacked node.
  const endOf = (key: string) => stackOf.get(key)?.id ?? key;
  const statusOf = (key: string) => {
    const stack = stackOf.get(key);
    return stack ? stackStatus(stack, byKey) : byKey.get(key)?.status;
  };
  const runs = (key: string) => (stackOf.get(key)?.keys ?? [key]).some((k) => byKey.get(k)?.status === "running");
  const waits = (key: string) => (stackOf.get(key)?.keys ?? [key]).some((k) => byKey.get(k)?.status === "queued");
  const edges = new Map<string, Routed>();
  for (const n of nodes) {
    for (const up of n.upstream) {
      const [source, target] = [endOf(up), endOf(n.key)];
      const id = `${source}->${target}`;
      if (edges.has(id)) continue;
      edges.set(id, {
        id,
        type: "routed",
        data: { via: routes.get(id) ?? [], vertical, wrapY: wraps.get(id) },
        source,
        target,
        animated: runs(n.key) || (statusOf(up) === "success" && waits(n.key)),
        className: `edge-${statusOf(up) ?? "none"}`,
        // Direction is not left to convention: a folded graph's edges run back to the left.
        markerEnd: { type: MarkerType.ArrowClosed, width: 14, height: 14, color: EDGE_COLOURS[statusOf(up) ?? ""] ?? EDGE_COLOUR },
      });
    }
  }
  // A graph shown whole has nothing to pan to: a drag over it (a swipe on a phone) scrolls the page.
  const pans = shown.overflows || zoomed;
  // React Flow's own Enter and Space only select the focused node in its store: opening its panel is ours.
  const openFocused = (event: KeyboardEvent<HTMLDivElement>) => {
    const target = event.target as HTMLElement;
    if (!onSelect || (event.key !== "Enter" && event.key !== " ") || !target.classList.contains("react-flow__node")) return;
    const id = target.dataset.id;
    if (!id) return;
    event.preventDefault();
    onSelect(id);
  };
  return (
    // biome-ignore lint/a11y/noStaticElementInteractions: the keys reach it from the focusable nodes inside, which React Flow renders
    <div
      className="dag"
      ref={box}
      style={{ height: shown.height }}
      data-overflows={shown.overflows}
      data-pans={pans}
      data-layout={vertical ? "TB" : "LR"}
      onKeyDown={openFocused}
    >
      {boxWidth > 0 && (
        <ReactFlow
          nodes={flowNodes}
          edges={[...edges.values()]}
          nodeTypes={nodeTypes}
          edgeTypes={edgeTypes}
          defaultViewport={shown.viewport}
          nodesConnectable={false}
          // Edges do nothing when chosen: Tab goes from node to node.
          edgesFocusable={false}
          proOptions={{ hideAttribution: true }}
          onNodeClick={(_, node) => node.type === "task" && onSelect?.(node.id)}
          // A programmatic move has no event: only the reader's own pan or zoom stops the following.
          onMoveStart={(event) => event && setMoved(true)}
          onMoveEnd={(_, viewport) => setZoomed(viewport.zoom > shown.viewport.zoom + 0.001)}
          panOnDrag={pans}
          minZoom={0.05}
          maxZoom={2}
          // A graph that fits leaves the wheel to the page; a larger one scrolls under it, as a long page would.
          zoomOnScroll={false}
          panOnScroll={shown.overflows}
          preventScrolling={shown.overflows}
        >
          <FrameViewport viewport={shown.viewport} moved={moved} />
          <Background gap={18} size={1} color="#e2e8f0" />
          <Controls showInteractive={false} orientation="horizontal" position="top-right" />
        </ReactFlow>
      )}
      {shown.overflows && (
        <div className="dag-hint" data-testid="dag-hint">
          {nodes.length} {t(nodes.length === 1 ? "flows.node" : "flows.nodes")} · {t("dag.pan")}
        </div>
      )}
    </div>
  );
}
