import { describe, expect, it } from "vitest";
import { LimitBlock } from "./limit-block.js";

describe("LimitBlock", () => {
  it("blocks until its time, or until a limit it waits on is released", () => {
    const block = new LimitBlock();
    expect(block.blocks(0)).toBe(false);
    block.block(1000, ["task:a", "pool:db"]);
    expect(block.blocks(999)).toBe(true);
    expect(block.blocks(1000)).toBe(false);
    block.released(new Set(["task:b"]));
    expect(block.blocks(500)).toBe(true);
    block.released(new Set(["pool:db"]));
    expect(block.blocks(500)).toBe(false);
  });

  it("only a new refusal changes what it waits on", () => {
    const block = new LimitBlock();
    block.block(1000, ["task:a"]);
    block.block(2000, ["pool:db"]);
    block.released(new Set(["task:a"]));
    expect(block.blocks(1500)).toBe(true);
    block.released(new Set(["pool:db"]));
    expect(block.blocks(1500)).toBe(false);
  });

  it("a rate limit's block (no keys) lasts until its time", () => {
    const block = new LimitBlock();
    block.block(300, []);
    block.released(new Set(["task:a"]));
    expect(block.blocks(299)).toBe(true);
    expect(block.blockedUntil).toBe(300);
  });
});
