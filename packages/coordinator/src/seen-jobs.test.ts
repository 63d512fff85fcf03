import { describe, expect, it } from "vitest";
import { SeenJobs } from "./seen-jobs.js";

describe("SeenJobs", () => {
  it("remembers a job for recheckMs, then asks for it to be checked again", () => {
    const seen = new SeenJobs(1000, 10);
    seen.add("a", 0);
    expect(seen.has("a", 999)).toBe(true);
    expect(seen.has("a", 1000)).toBe(false);
    expect(seen.size).toBe(0);
  });

  it("stays within max entries by forgetting the oldest, and a re-added key counts as new", () => {
    const seen = new SeenJobs(60_000, 3);
    for (const key of ["a", "b", "c"]) seen.add(key, 0);
    seen.add("a", 1);
    seen.add("d", 2);
    expect(seen.size).toBe(3);
    expect(["a", "b", "c", "d"].filter((k) => seen.has(k, 3))).toEqual(["a", "c", "d"]);
  });

  it("forgets everything when Redis lost its data", () => {
    const seen = new SeenJobs(60_000, 3);
    seen.add("a", 0);
    seen.clear();
    expect(seen.has("a", 1)).toBe(false);
  });
});
