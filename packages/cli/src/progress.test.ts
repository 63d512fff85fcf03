import { describe, expect, it } from "vitest";
import { Stall } from "./progress.js";

describe("Stall", () => {
  it("speaks up only once runs wait with none running and nothing has moved for the whole delay", () => {
    let now = 0;
    const stall = new Stall(15_000, () => now);
    const waiting = { done: 0, running: 0, waiting: 5 };
    expect(stall.text(waiting)).toBe("");
    now = 14_000;
    expect(stall.text(waiting)).toBe("");
    now = 16_000;
    expect(stall.text(waiting)).toMatch(/nothing started for 16s: is a coordinator running, and a worker/);
    // A run ending restarts the wait.
    now = 17_000;
    expect(stall.text({ done: 1, running: 0, waiting: 4 })).toBe("");
    now = 40_000;
    expect(stall.text({ done: 1, running: 2, waiting: 2 })).toBe("");
    expect(stall.text({ done: 5, running: 0, waiting: 0 })).toBe("");
  });
});
