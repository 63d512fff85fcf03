/** What the graph's box shows first: its height, and the zoom and position that keep node names readable. */
import type { Viewport } from "@xyflow/react";
import { HEIGHT, NODE_SEP, type Point, RANK_SEP, WRAP_OUT } from "./dag-layout";
import { STACK_PAD } from "./dag-stack";

/** Below this zoom a node's key drops under 11 px (it is 14 px): the graph is panned rather than shrunk further. */
const READABLE = 0.8;
const PAD = 24;
/** Above the graph: room for the zoom buttons, which would otherwise cover a node of a graph as wide as its box. */
const TOP = 52;
const MIN_HEIGHT = 150;
/** Of the window's height: the page around the graph (the node panel under it) stays in reach. */
const MAX_HEIGHT = 0.7;
/** A box narrower than this (a phone) lays the graph out top to bottom, at most this much of the window high. */
export const NARROW = 600;
const NARROW_MAX_HEIGHT = 0.55;
/** In a narrow box, a graph that fits whole at this zoom or more opens whole rather than cut off. */
const WHOLE_ON_NARROW = 0.5;
/** How many columns of `cell`-wide nodes a box shows side by side at a readable zoom, with the returning edges beside them. */
export function bandColumns(box: number, cell: number): number {
  if (box <= 0) return Number.POSITIVE_INFINITY;
  return Math.max(2, Math.floor(((box - 2 * PAD) / READABLE - 2 * WRAP_OUT + RANK_SEP) / (cell + RANK_SEP)));
}

/** How many nodes of one column the tallest box shows one under the other at a readable zoom, in a stack's frame. */
export function stackRows(windowHeight: number): number {
  const room = (Math.max(MIN_HEIGHT, windowHeight * MAX_HEIGHT) - TOP - PAD) / READABLE - STACK_PAD.top - STACK_PAD.bottom;
  return Math.max(3, Math.floor((room + NODE_SEP) / (HEIGHT + NODE_SEP)));
}

/** How many `cell`-wide nodes a narrow box shows side by side at a readable zoom (a top-to-bottom graph's stacked rows). */
export function stackAcross(box: number, cell: number): number {
  if (box <= 0) return Number.POSITIVE_INFINITY;
  return Math.max(1, Math.floor(((box - 2 * PAD) / READABLE - 2 * STACK_PAD.x + NODE_SEP) / (cell + NODE_SEP)));
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
export function frame(graph: { width: number; height: number }, box: number, windowHeight: number, focus: Point | undefined): Frame {
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
