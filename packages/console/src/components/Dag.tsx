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
  useReactFlow,
  type Viewport,
} from "@xyflow/react";
import { type KeyboardEvent, type RefObject, useEffect, useMemo, useRef, useState } from "react";
import { type MessageKey, useI18n } from "../i18n";
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

/** A node is as wide as its graph's longest key needs, within these: similar names stay apart, a long one does not stretch every node past reason. */
const MIN_WIDTH = 200;
const MAX_WIDTH = 320;
/** The key's 14 px semibold text per character (a little over its average, so most fit), and the dot and padding around it. */
const CHAR_PX = 8.6;
const KEY_CHROME_PX = 50;
const HEIGHT = 64;

/** One width for every node of a graph: columns stay aligned. */
function nodeWidth(nodes: DagNode[]): number {
  const longest = Math.max(0, ...nodes.map((n) => n.key.length));
  return Math.min(MAX_WIDTH, Math.max(MIN_WIDTH, Math.ceil(longest * CHAR_PX + KEY_CHROME_PX)));
}

/**
 * A key too long for its node, shortened in the middle: keys alike differ mostly at their end
 * (`…_stage_07`, `name#2`), which an ellipsis at the end would cut. The whole key is the title.
 */
export function shortKey(key: string, width: number): string {
  const fits = Math.floor((width - KEY_CHROME_PX) / CHAR_PX);
  if (key.length <= fits) return key;
  const tail = Math.ceil(fits * 0.45);
  return `${key.slice(0, Math.max(1, fits - tail - 1))}…${key.slice(key.length - tail)}`;
}

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

const nodeTypes = { task: TaskNode };

interface Point {
  x: number;
  y: number;
}

type Routed = Edge<{ via: Point[]; vertical: boolean }>;

/**
 * An edge through the points dagre routed it by. An edge that skips a column would otherwise be
 * drawn straight from handle to handle, across the nodes of the columns it skips (in the
 * article's flow, parse_payment -> send_notification through create_invoice). Each stretch is a
 * curve leaving and arriving level (upright in a top-to-bottom graph), as React Flow draws an
 * edge between neighbouring columns.
 */
function RoutedEdge({ id, sourceX, sourceY, targetX, targetY, data }: EdgeProps<Routed>) {
  const via = data?.via ?? [];
  const vertical = data?.vertical ?? false;
  if (via.length === 0) {
    const [sourcePosition, targetPosition] = vertical ? [Position.Bottom, Position.Top] : [Position.Right, Position.Left];
    const [path] = getBezierPath({ sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition });
    return <BaseEdge id={id} path={path} />;
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
  return <BaseEdge id={id} path={`M ${sourceX},${sourceY} ${stretches.join(" ")}`} />;
}

const edgeTypes = { routed: RoutedEdge };

interface Layout {
  positions: Map<string, Point>;
  /** Every node's width. */
  nodeWidth: number;
  /** The laid-out graph's extent, nodes' top-left corners starting at 0,0. */
  width: number;
  height: number;
  /** Per edge `up->key` that skips a column, the points between its ends that dagre routed it by. */
  routes: Map<string, Point[]>;
}

/**
 * Layout by dagre: upstream nodes left of their dependants, or above them in a narrow box (a
 * phone), where a chain of a few nodes then fits whole at a readable size.
 */
function layout(nodes: DagNode[], vertical: boolean): Layout {
  const cell = nodeWidth(nodes);
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: vertical ? "TB" : "LR", nodesep: 28, ranksep: vertical ? 40 : 64 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of nodes) g.setNode(n.key, { width: cell, height: HEIGHT });
  for (const n of nodes) for (const up of n.upstream) g.setEdge(up, n.key);
  dagre.layout(g);
  const centre = (key: string): Point => g.node(key);
  // Where a node's rank lies: its column, or its row in a top-to-bottom graph.
  const rank = (key: string) => (vertical ? centre(key).y : centre(key).x);
  const columns = [...new Set(nodes.map((n) => rank(n.key)))];
  const routes = new Map<string, Point[]>();
  for (const n of nodes) {
    for (const up of n.upstream) {
      const [from, to] = [rank(up), rank(n.key)];
      if (!columns.some((x) => x > from && x < to)) continue;
      // dagre's first and last points lie on the nodes' borders; the handles replace them.
      routes.set(`${up}->${n.key}`, g.edge(up, n.key).points.slice(1, -1));
    }
  }
  const positions = new Map(nodes.map((n) => [n.key, { x: centre(n.key).x - cell / 2, y: centre(n.key).y - HEIGHT / 2 }]));
  // The box holds the edges too: a skip edge routed above the top node was drawn on the frame's border.
  const via = [...routes.values()].flat();
  const boxes = [...[...positions.values()].map((p) => [p.x, p.y, p.x + cell, p.y + HEIGHT]), ...via.map((p) => [p.x, p.y, p.x, p.y])];
  const [left, top] = [Math.min(0, ...boxes.map((b) => b[0]!)), Math.min(0, ...boxes.map((b) => b[1]!))];
  const [right, bottom] = [Math.max(0, ...boxes.map((b) => b[2]!)), Math.max(0, ...boxes.map((b) => b[3]!))];
  for (const p of [...positions.values(), ...via]) {
    p.x -= left;
    p.y -= top;
  }
  return { positions, nodeWidth: cell, routes, width: right - left, height: bottom - top };
}

/** Below this zoom a node's key drops under 11 px (it is 14 px): the graph is panned rather than shrunk further. */
const READABLE = 0.8;
const PAD = 24;
const MIN_HEIGHT = 150;
/** Of the window's height: the page around the graph (the node panel under it) stays in reach. */
const MAX_HEIGHT = 0.7;
/** A box narrower than this (a phone) lays the graph out top to bottom, at most this much of the window high. */
const NARROW = 600;
const NARROW_MAX_HEIGHT = 0.55;
/** In a narrow box, a graph that fits whole at this zoom or more opens whole rather than cut off. */
const WHOLE_ON_NARROW = 0.5;
/** Statuses someone opens a run's page to see: kept in view when the whole graph does not fit. */
const WATCHED = ["failed", "running", "retrying"];

interface Frame {
  height: number;
  viewport: Viewport;
  /** The graph at a readable size is larger than its box: panning shows the rest. */
  overflows: boolean;
}

/**
 * The box's height and the initial viewport: the whole graph when it fits at a readable zoom,
 * otherwise a readable part of it around the node to watch.
 */
function frame(graph: { width: number; height: number }, box: number, windowHeight: number, focus: Point | undefined): Frame {
  const narrow = box < NARROW;
  const maxHeight = Math.max(MIN_HEIGHT, Math.round(windowHeight * (narrow ? NARROW_MAX_HEIGHT : MAX_HEIGHT)));
  const fit = Math.min(1, (box - 2 * PAD) / graph.width, (maxHeight - 2 * PAD) / graph.height);
  const zoom = fit >= (narrow ? WHOLE_ON_NARROW : READABLE) ? fit : READABLE;
  const [w, h] = [graph.width * zoom, graph.height * zoom];
  const height = Math.min(maxHeight, Math.max(MIN_HEIGHT, Math.ceil(h + 2 * PAD)));
  const overflows = w + 2 * PAD > box + 1 || h + 2 * PAD > height + 1;
  // Centred along an axis that fits; along one that does not, the focus is centred, the graph's ends kept at the edges.
  const place = (size: number, room: number, at: number | undefined) => {
    if (size + 2 * PAD <= room) return (room - size) / 2;
    const centred = at === undefined ? PAD : room / 2 - at * zoom;
    return Math.min(PAD, Math.max(room - PAD - size, centred));
  };
  return { height, overflows, viewport: { x: place(w, box, focus?.x), y: place(h, height, focus?.y), zoom } };
}

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
  // biome-ignore lint/correctness/useExhaustiveDependencies: the layout changes with the DAG's shape only, not with states
  const graph = useMemo(() => layout(nodes, vertical), [shape, vertical]);
  const { positions, routes, nodeWidth: cell } = graph;
  const [moved, setMoved] = useState(false);
  // Zoomed in past the frame (with +): the graph no longer fits, and dragging pans it.
  const [zoomed, setZoomed] = useState(false);
  // Otherwise the graph's first root: the left end of a chain, the stem of a fan-out.
  const watched = nodes.find((n) => WATCHED.includes(n.status ?? "")) ?? nodes.find((n) => n.upstream.length === 0);
  const at = watched && positions.get(watched.key);
  const shown = frame(graph, boxWidth, windowHeight, at && { x: at.x + cell / 2, y: at.y + HEIGHT / 2 });
  const flowNodes: Node<Data>[] = nodes.map((n) => ({
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
  const byKey = new Map(nodes.map((n) => [n.key, n]));
  const edges: Routed[] = nodes.flatMap((n) =>
    n.upstream.map((up) => ({
      id: `${up}->${n.key}`,
      type: "routed",
      data: { via: routes.get(`${up}->${n.key}`) ?? [], vertical },
      source: up,
      target: n.key,
      animated: n.status === "running" || (byKey.get(up)?.status === "success" && n.status === "queued"),
      className: `edge-${byKey.get(up)?.status ?? "none"}`,
    })),
  );
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
          edges={edges}
          nodeTypes={nodeTypes}
          edgeTypes={edgeTypes}
          defaultViewport={shown.viewport}
          nodesConnectable={false}
          // Edges do nothing when chosen: Tab goes from node to node.
          edgesFocusable={false}
          proOptions={{ hideAttribution: true }}
          onNodeClick={(_, node) => onSelect?.(node.id)}
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
