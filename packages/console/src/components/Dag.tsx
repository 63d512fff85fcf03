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

type Routed = Edge<{ via: Point[]; vertical: boolean; wrapY?: number | undefined }>;

/** How far a returning edge runs out beside its nodes' columns, and the radius of its corners. */
const WRAP_OUT = 24;
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
function RoutedEdge({ id, sourceX, sourceY, targetX, targetY, data }: EdgeProps<Routed>) {
  const via = data?.via ?? [];
  const vertical = data?.vertical ?? false;
  if (data?.wrapY !== undefined) return <BaseEdge id={id} path={wrapPath(sourceX, sourceY, targetX, targetY, data.wrapY)} />;
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
  /** Per edge `up->key` from one band of a folded graph to a later one, the height of its run back to the left. */
  wraps: Map<string, number>;
}

const RANK_SEP = 64;
/** Between two bands of a folded graph: room for the edges that run back to the left. */
const BAND_GAP = 48;

/**
 * Layout by dagre: upstream nodes left of their dependants, or above them in a narrow box (a
 * phone), where a chain of a few nodes then fits whole at a readable size. A graph with more
 * columns than `perBand` is folded into bands of that many, one under the other, as text wraps
 * into lines: a 30-step chain is seen whole instead of as a strip panned sideways.
 */
function layout(nodes: DagNode[], vertical: boolean, perBand: number): Layout {
  const cell = nodeWidth(nodes);
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: vertical ? "TB" : "LR", nodesep: 28, ranksep: vertical ? 40 : RANK_SEP });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of nodes) g.setNode(n.key, { width: cell, height: HEIGHT });
  for (const n of nodes) for (const up of n.upstream) g.setEdge(up, n.key);
  dagre.layout(g);
  const centre = (key: string): Point => g.node(key);
  // Where a node's rank lies: its column, or its row in a top-to-bottom graph.
  const rank = (key: string) => (vertical ? centre(key).y : centre(key).x);
  const columns = [...new Set(nodes.map((n) => rank(n.key)))].sort((a, b) => a - b);
  const fold = !vertical && columns.length > perBand ? perBand : columns.length;
  const band = (key: string) => Math.floor(columns.indexOf(rank(key)) / fold);
  // Each band moved left to the first column and down under the band before it.
  const bands = Math.ceil(columns.length / fold);
  const shift: Point[] = [];
  /** Each band's lowest edge, once moved. */
  const bottoms: number[] = [];
  for (let b = 0; b < bands; b++) {
    const inBand = nodes.filter((n) => band(n.key) === b).map((n) => centre(n.key).y);
    const top = Math.min(...inBand) - HEIGHT / 2;
    shift.push({ x: columns[0]! - columns[b * fold]!, y: b === 0 ? 0 : bottoms[b - 1]! + BAND_GAP - top });
    bottoms.push(Math.max(...inBand) + HEIGHT / 2 + shift[b]!.y);
  }
  const moved = (p: Point, b: number): Point => ({ x: p.x + shift[b]!.x, y: p.y + shift[b]!.y });
  const routes = new Map<string, Point[]>();
  const wraps = new Map<string, number>();
  for (const n of nodes) {
    for (const up of n.upstream) {
      const id = `${up}->${n.key}`;
      if (band(up) !== band(n.key)) {
        wraps.set(id, bottoms[band(up)]! + BAND_GAP / 2);
        continue;
      }
      const [from, to] = [rank(up), rank(n.key)];
      if (!columns.some((x) => x > from && x < to)) continue;
      // dagre's first and last points lie on the nodes' borders; the handles replace them.
      routes.set(
        id,
        g
          .edge(up, n.key)
          .points.slice(1, -1)
          .map((p: Point) => moved(p, band(up))),
      );
    }
  }
  const positions = new Map(
    nodes.map((n) => {
      const c = moved(centre(n.key), band(n.key));
      return [n.key, { x: c.x - cell / 2, y: c.y - HEIGHT / 2 }];
    }),
  );
  // The box holds the edges too: a skip edge routed above the top node was drawn on the frame's border.
  const via = [...routes.values()].flat();
  const boxes = [
    ...[...positions.values()].map((p) => [p.x, p.y, p.x + cell, p.y + HEIGHT]),
    ...via.map((p) => [p.x, p.y, p.x, p.y]),
    ...(wraps.size > 0 ? [[-WRAP_OUT, 0, Math.max(...[...positions.values()].map((p) => p.x + cell)) + WRAP_OUT, 0]] : []),
  ];
  const [left, top] = [Math.min(0, ...boxes.map((b) => b[0]!)), Math.min(0, ...boxes.map((b) => b[1]!))];
  const [right, bottomEdge] = [Math.max(0, ...boxes.map((b) => b[2]!)), Math.max(0, ...boxes.map((b) => b[3]!))];
  for (const p of [...positions.values(), ...via]) {
    p.x -= left;
    p.y -= top;
  }
  for (const [id, y] of wraps) wraps.set(id, y - top);
  return { positions, nodeWidth: cell, routes, wraps, width: right - left, height: bottomEdge - top };
}

/** Below this zoom a node's key drops under 11 px (it is 14 px): the graph is panned rather than shrunk further. */
const READABLE = 0.8;
const PAD = 24;
/** Above the graph: room for the zoom buttons, which would otherwise cover a node of a graph as wide as its box. */
const TOP = 52;
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

/** How many columns of `cell`-wide nodes a box shows side by side at a readable zoom, with the returning edges beside them. */
function bandColumns(box: number, cell: number): number {
  if (box <= 0) return Number.POSITIVE_INFINITY;
  return Math.max(2, Math.floor(((box - 2 * PAD) / READABLE - 2 * WRAP_OUT + RANK_SEP) / (cell + RANK_SEP)));
}

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
  const fit = Math.min(1, (box - 2 * PAD) / graph.width, (maxHeight - TOP - PAD) / graph.height);
  const zoom = fit >= (narrow ? WHOLE_ON_NARROW : READABLE) ? fit : READABLE;
  const [w, h] = [graph.width * zoom, graph.height * zoom];
  const height = Math.min(maxHeight, Math.max(MIN_HEIGHT, Math.ceil(h + TOP + PAD)));
  const overflows = w + 2 * PAD > box + 1 || h + TOP + PAD > height + 1;
  // Centred along an axis that fits; along one that does not, the focus is centred, the graph's ends kept at the edges.
  const place = (size: number, room: number, before: number, at: number | undefined) => {
    if (size + before + PAD <= room) return before + (room - before - PAD - size) / 2;
    const centred = at === undefined ? before : room / 2 - at * zoom;
    return Math.min(before, Math.max(room - PAD - size, centred));
  };
  return { height, overflows, viewport: { x: place(w, box, PAD, focus?.x), y: place(h, height, TOP, focus?.y), zoom } };
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
  const perBand = bandColumns(boxWidth, nodeWidth(nodes));
  // biome-ignore lint/correctness/useExhaustiveDependencies: the layout changes with the DAG's shape only, not with states
  const graph = useMemo(() => layout(nodes, vertical, perBand), [shape, vertical, perBand]);
  const { positions, routes, wraps, nodeWidth: cell } = graph;
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
      data: { via: routes.get(`${up}->${n.key}`) ?? [], vertical, wrapY: wraps.get(`${up}->${n.key}`) },
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
