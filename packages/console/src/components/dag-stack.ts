/** A column of many alike nodes (a fan-out) set out in a few side-by-side columns inside one frame. */
import type { DagNode, Point } from "./dag-layout";

/** Between a stack's side-by-side columns: closer than two ranks, as they are one rank. */
const STACK_GAP = 28;
/** Around a stack's nodes inside its frame; the top leaves room for its caption. */
export const STACK_PAD = { x: 12, top: 28, bottom: 12 };

export interface Stack {
  id: string;
  /** Its nodes in the DAG's order, read down each column, then the next. */
  keys: string[];
  /** The nodes every one of its nodes takes arguments from, and those every one of them feeds. */
  upstream: string[];
  downstream: string[];
  /** The frame around its nodes, top-left corner and size. */
  box: { x: number; y: number; width: number; height: number };
}

/**
 * Stacks each column of more than `rows` nodes that all share the same upstream and the same
 * downstream nodes (a fan-out's leaves), so twenty leaves read as a block of three short columns
 * instead of one column taller than the screen. Moves `centres` in place: a stack's nodes into its
 * grid, everything right of it by the width it gained. The graph keeps to `maxColumns` columns (past
 * them it is folded into bands instead): a stack gets fewer, taller columns when the box is narrow,
 * and a column is left alone when no room is left for a second. Returns the stacks, and where a
 * point at x moved to (for the points dagre routed edges by).
 */
export function stackColumns(
  nodes: DagNode[],
  centres: Map<string, Point>,
  size: { cell: number; height: number; nodeSep: number },
  rows: number,
  maxColumns: number,
  options: { pad?: typeof STACK_PAD; tallerThan?: number } = {},
): { stacks: Stack[]; shifted: (x: number) => number } {
  const pad = options.pad ?? STACK_PAD;
  const tallerThan = options.tallerThan ?? rows;
  const downstream = new Map<string, string[]>(nodes.map((n) => [n.key, []]));
  for (const n of nodes) for (const up of n.upstream) downstream.get(up)?.push(n.key);
  const signature = (key: string, n: DagNode) => `${[...n.upstream].sort().join(",")}|${[...downstream.get(key)!].sort().join(",")}`;
  const byColumn = new Map<number, DagNode[]>();
  for (const n of nodes) {
    const x = centres.get(n.key)!.x;
    byColumn.set(x, [...(byColumn.get(x) ?? []), n]);
  }
  let spare = maxColumns - byColumn.size;
  const tall: [number, DagNode[]][] = [];
  const widths: number[] = [];
  for (const [x, column] of [...byColumn.entries()].sort(([a], [b]) => a - b)) {
    if (column.length <= tallerThan || new Set(column.map((n) => signature(n.key, n))).size > 1) continue;
    const k = Math.min(Math.ceil(column.length / rows), 1 + spare);
    if (k < 2) continue;
    spare -= k - 1;
    tall.push([x, column]);
    widths.push(k);
  }
  if (tall.length === 0) return { stacks: [], shifted: (x) => x };

  const { cell, height, nodeSep } = size;
  const gained = widths.map((k) => (k - 1) * (cell + STACK_GAP));
  // Every x right of a stacked column moves by what the stacks left of it gained.
  const shifted = (x: number) => x + tall.reduce((sum, [cx], i) => (x > cx ? sum + gained[i]! : sum), 0);
  const stacks = tall.map(([cx, column], i): Stack => {
    const k = widths[i]!;
    const perColumn = Math.ceil(column.length / k);
    const ys = column.map((n) => centres.get(n.key)!.y);
    const middle = (Math.min(...ys) + Math.max(...ys)) / 2;
    const tallness = perColumn * height + (perColumn - 1) * nodeSep;
    const left = shifted(cx) - cell / 2;
    const top = middle - tallness / 2;
    column.forEach((n, j) => {
      const [col, row] = [Math.floor(j / perColumn), j % perColumn];
      centres.set(n.key, { x: left + cell / 2 + col * (cell + STACK_GAP), y: top + height / 2 + row * (height + nodeSep) });
    });
    const first = column[0]!;
    return {
      id: `stack:${first.key}`,
      keys: column.map((n) => n.key),
      upstream: first.upstream,
      downstream: downstream.get(first.key)!,
      box: {
        x: left - pad.x,
        y: top - pad.top,
        width: k * cell + (k - 1) * STACK_GAP + 2 * pad.x,
        height: tallness + pad.top + pad.bottom,
      },
    };
  });
  const stacked = new Set(stacks.flatMap((s) => s.keys));
  for (const n of nodes) {
    if (stacked.has(n.key)) continue;
    const c = centres.get(n.key)!;
    centres.set(n.key, { x: shifted(c.x), y: c.y });
  }
  return { stacks, shifted };
}

/** Around a stack in a top-to-bottom graph, given across (its left and right) and along (top and bottom, the top holding its caption). */
const ROW_STACK_PAD = { x: STACK_PAD.top, top: STACK_PAD.x, bottom: STACK_PAD.x };

const across = (p: Point): Point => ({ x: p.y, y: p.x });

/**
 * `stackColumns` for a top-to-bottom graph (a phone), where a fan-out's leaves form one row far
 * wider than the screen: a row of more than `tallerThan` alike nodes is set out `perRow` to a row,
 * in the DAG's order, one row under the other inside one frame. Laid out as `stackColumns` does
 * with the axes swapped. Returns the stacks, and where a point at y moved to.
 */
export function stackRows(
  nodes: DagNode[],
  centres: Map<string, Point>,
  size: { cell: number; height: number; nodeSep: number },
  perRow: number,
  tallerThan: number,
): { stacks: Stack[]; shifted: (y: number) => number } {
  const swapped = new Map([...centres].map(([key, p]) => [key, across(p)]));
  const turned = { cell: size.height, height: size.cell, nodeSep: size.nodeSep };
  const { stacks, shifted } = stackColumns(nodes, swapped, turned, perRow, Number.POSITIVE_INFINITY, { pad: ROW_STACK_PAD, tallerThan });
  for (const [key, p] of swapped) centres.set(key, across(p));
  for (const stack of stacks) {
    const { x, y, width, height } = stack.box;
    stack.box = { x: y, y: x, width: height, height: width };
  }
  return { stacks, shifted };
}
