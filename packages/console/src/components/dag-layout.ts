/** Where a DAG's nodes and edges go: dagre's layout, folded into bands when it has more columns than its box shows. */
import dagre from "@dagrejs/dagre";
import { type Stack, stackColumns, stackRows } from "./dag-stack";

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
export const HEIGHT = 64;

/** One width for every node of a graph: columns stay aligned. */
export function nodeWidth(nodes: DagNode[]): number {
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

export interface Point {
  x: number;
  y: number;
}

/** How far an edge returning to the next band runs out beside its nodes' columns. */
export const WRAP_OUT = 24;

export interface Layout {
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
  /** Tall columns of alike nodes set out side by side in a frame; their edges are drawn to the frame. */
  stacks: Stack[];
}

export const RANK_SEP = 64;
/** Between two nodes of a column. */
export const NODE_SEP = 28;
/** Between two bands of a folded graph: room for the edges that run back to the left. */
const BAND_GAP = 48;

/**
 * Layout by dagre: upstream nodes left of their dependants, or above them in a narrow box (a
 * phone), where a chain of a few nodes then fits whole at a readable size. A graph with more
 * columns than `perBand` is folded into bands of that many, one under the other, as text wraps
 * into lines: a 30-step chain is seen whole instead of as a strip panned sideways. A column of more
 * than `perColumn` alike nodes (a fan-out) is stacked side by side instead (`stackColumns`); top to
 * bottom, a row of them wider than the screen is set out `perRow` to a row under each other (`stackRows`).
 */
export function layout(
  nodes: DagNode[],
  vertical: boolean,
  perBand: number,
  perColumn = Number.POSITIVE_INFINITY,
  perRow = Number.POSITIVE_INFINITY,
): Layout {
  const cell = nodeWidth(nodes);
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: vertical ? "TB" : "LR", nodesep: NODE_SEP, ranksep: vertical ? 40 : RANK_SEP });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of nodes) g.setNode(n.key, { width: cell, height: HEIGHT });
  for (const n of nodes) for (const up of n.upstream) g.setEdge(up, n.key);
  dagre.layout(g);
  const centres = new Map<string, Point>(nodes.map((n) => [n.key, { x: g.node(n.key).x, y: g.node(n.key).y }]));
  const size = { cell, height: HEIGHT, nodeSep: NODE_SEP };
  // Two alike nodes side by side still fit a phone's screen whole, zoomed out a little.
  const stacking = vertical
    ? stackRows(nodes, centres, size, perRow, Math.max(2, perRow))
    : stackColumns(nodes, centres, size, perColumn, perBand);
  const { stacks } = stacking;
  const shifted = (p: Point): Point => (vertical ? { x: p.x, y: stacking.shifted(p.y) } : { x: stacking.shifted(p.x), y: p.y });
  const stacked = new Set(stacks.flatMap((s) => s.keys));
  const centre = (key: string): Point => centres.get(key)!;
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
      // Drawn to its stack's frame, from the neighbouring column.
      if (stacked.has(up) || stacked.has(n.key)) continue;
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
          .map((p: Point) => moved(shifted(p), band(up))),
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
    ...stacks.map(({ box }) => [box.x, box.y, box.x + box.width, box.y + box.height]),
    ...(wraps.size > 0 ? [[-WRAP_OUT, 0, Math.max(...[...positions.values()].map((p) => p.x + cell)) + WRAP_OUT, 0]] : []),
  ];
  // From what is drawn, not from 0: a stack shortens its column, leaving dagre's top rows empty.
  const extent = (side: number, pick: (...xs: number[]) => number) => (boxes.length === 0 ? 0 : pick(...boxes.map((b) => b[side]!)));
  const [left, top, right, bottomEdge] = [extent(0, Math.min), extent(1, Math.min), extent(2, Math.max), extent(3, Math.max)];
  for (const p of [...positions.values(), ...via]) {
    p.x -= left;
    p.y -= top;
  }
  for (const [id, y] of wraps) wraps.set(id, y - top);
  for (const { box } of stacks) {
    box.x -= left;
    box.y -= top;
  }
  return { positions, nodeWidth: cell, routes, wraps, stacks, width: right - left, height: bottomEdge - top };
}
