import { describe, expect, it } from "vitest";
import { layout } from "./dag-layout";

const fanOut = (leaves: number, extra?: (key: string, i: number) => string[]) => [
  { key: "start", task: "start", upstream: [] },
  ...Array.from({ length: leaves }, (_, i) => ({ key: `leaf#${i + 1}`, task: "leaf", upstream: extra?.(`leaf#${i + 1}`, i) ?? ["start"] })),
  { key: "gather", task: "gather", upstream: Array.from({ length: leaves }, (_, i) => `leaf#${i + 1}`) },
];

describe("stacking a tall column of alike nodes", () => {
  it("sets twenty leaves out in three columns of seven, in the DAG's order, inside one frame between their neighbours", () => {
    const graph = layout(fanOut(20), false, 10, 7);
    expect(graph.stacks).toHaveLength(1);
    const [stack] = graph.stacks;
    expect(stack!.keys).toEqual(Array.from({ length: 20 }, (_, i) => `leaf#${i + 1}`));
    expect(stack!.upstream).toEqual(["start"]);
    expect(stack!.downstream).toEqual(["gather"]);
    const at = (key: string) => graph.positions.get(key)!;
    const xs = new Set(stack!.keys.map((k) => at(k).x));
    expect(xs.size).toBe(3);
    // Down the first column, then the next.
    expect(at("leaf#2").x).toBe(at("leaf#1").x);
    expect(at("leaf#2").y).toBeGreaterThan(at("leaf#1").y);
    expect(at("leaf#8").x).toBeGreaterThan(at("leaf#7").x);
    expect(at("leaf#8").y).toBe(at("leaf#1").y);
    for (const key of stack!.keys) {
      const p = at(key);
      expect(p.x).toBeGreaterThanOrEqual(stack!.box.x);
      expect(p.x + graph.nodeWidth).toBeLessThanOrEqual(stack!.box.x + stack!.box.width);
      expect(p.y).toBeGreaterThanOrEqual(stack!.box.y);
    }
    expect(at("start").x + graph.nodeWidth).toBeLessThan(stack!.box.x);
    expect(at("gather").x).toBeGreaterThan(stack!.box.x + stack!.box.width);
    // Seven rows, not twenty: the graph is about as tall as the stack.
    expect(graph.height).toBe(stack!.box.height);
  });

  it("in a narrower box, stacks in as many columns as fit, taller ones", () => {
    const graph = layout(fanOut(20), false, 4, 7);
    expect(new Set(graph.stacks[0]!.keys.map((k) => graph.positions.get(k)!.x)).size).toBe(2);
    expect(graph.positions.get("leaf#11")!.y).toBe(graph.positions.get("leaf#1")!.y);
  });

  it("leaves a column alone when its nodes differ in upstream, when it is short, when no second column fits, and top to bottom", () => {
    expect(
      layout(
        fanOut(20, (_, i) => (i === 3 ? [] : ["start"])),
        false,
        10,
        7,
      ).stacks,
    ).toEqual([]);
    expect(layout(fanOut(6), false, 10, 7).stacks).toEqual([]);
    expect(layout(fanOut(20), false, 3, 7).stacks).toEqual([]);
    expect(layout(fanOut(20), true, 10, 7).stacks).toEqual([]);
  });
});

describe("stacking a wide row of alike nodes, top to bottom (a phone)", () => {
  const inf = Number.POSITIVE_INFINITY;

  it("sets twelve leaves one under the other, in the DAG's order, inside one frame between their neighbours", () => {
    const graph = layout(fanOut(12), true, inf, inf, 1);
    expect(graph.stacks).toHaveLength(1);
    const [stack] = graph.stacks;
    expect(stack!.keys).toEqual(Array.from({ length: 12 }, (_, i) => `leaf#${i + 1}`));
    const at = (key: string) => graph.positions.get(key)!;
    expect(new Set(stack!.keys.map((k) => at(k).x)).size).toBe(1);
    for (let i = 1; i < 12; i++) expect(at(`leaf#${i + 1}`).y).toBeGreaterThan(at(`leaf#${i}`).y);
    for (const key of stack!.keys) {
      const p = at(key);
      expect(p.x).toBeGreaterThanOrEqual(stack!.box.x);
      expect(p.x + graph.nodeWidth).toBeLessThanOrEqual(stack!.box.x + stack!.box.width);
      expect(p.y).toBeGreaterThanOrEqual(stack!.box.y);
      expect(p.y + 64).toBeLessThanOrEqual(stack!.box.y + stack!.box.height);
    }
    expect(at("start").y + 64).toBeLessThan(stack!.box.y);
    expect(at("gather").y).toBeGreaterThan(stack!.box.y + stack!.box.height);
    // One node wide: the graph is no wider than the frame.
    expect(graph.width).toBe(stack!.box.width);
  });

  it("puts as many side by side as fit, and leaves two alike nodes side by side", () => {
    const graph = layout(fanOut(12), true, inf, inf, 2);
    const at = (key: string) => graph.positions.get(key)!;
    expect(at("leaf#2").y).toBe(at("leaf#1").y);
    expect(at("leaf#2").x).toBeGreaterThan(at("leaf#1").x);
    expect(at("leaf#3").y).toBeGreaterThan(at("leaf#1").y);
    expect(layout(fanOut(2), true, inf, inf, 1).stacks).toEqual([]);
  });
});
