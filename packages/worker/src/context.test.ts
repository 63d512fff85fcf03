import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { runInTaskContext, taskContextStorage, type TaskContext } from "./context.js";

const contextFor = (runId: string) => ({ runId }) as TaskContext;
const seenRun = () => taskContextStorage.getStore()?.runId;

describe("runInTaskContext", () => {
  it("keeps each pending function's context across awaits and timers while others start and settle", async () => {
    const long = runInTaskContext(contextFor("long"), async () => {
      const seen = [seenRun()];
      await sleep(30);
      seen.push(seenRun());
      await new Promise<void>((resolve) => setImmediate(resolve));
      seen.push(seenRun());
      return seen;
    });
    // Short functions settle (some synchronously) while `long` waits on its timer.
    const short = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        runInTaskContext(contextFor(`short-${i}`), async () => {
          const first = seenRun();
          if (i % 2 === 0) return [first];
          await Promise.resolve();
          return [first, seenRun()];
        }),
      ),
    );
    expect(short).toEqual(short.map((seen, i) => seen.map(() => `short-${i}`)));
    expect(await long).toEqual(["long", "long", "long"]);
  });

  it("gives the context again once every earlier function settled, and none outside", async () => {
    await runInTaskContext(contextFor("first"), () => seenRun());
    expect(seenRun()).toBeUndefined();
    const again = await runInTaskContext(contextFor("second"), async () => {
      await sleep(5);
      return seenRun();
    });
    expect(again).toBe("second");
    expect(seenRun()).toBeUndefined();
  });

  it("settles with the function's error and still frees the storage", async () => {
    await expect(
      runInTaskContext(contextFor("failing"), () => {
        throw new Error("task error");
      }),
    ).rejects.toThrow("task error");
    expect(await runInTaskContext(contextFor("after"), () => seenRun())).toBe("after");
  });
});
