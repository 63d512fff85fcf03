import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { AxDefinitionError } from "@ax/common";
import { runInTaskContext, taskContextStorage, type TaskContext } from "./context.js";

const contextFor = (runId: string) => ({ runId, nodeKey: "node", attempt: 1 }) as TaskContext;
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

  it("refuses the context to work a settled function left running, beside another pending function too", async () => {
    const leftovers: Promise<() => string | undefined>[] = [];
    /** A function that returns at once and leaves a timer reading the context after `ms`. */
    const leaky = (runId: string, ms: number) =>
      runInTaskContext(contextFor(runId), () => {
        leftovers.push(
          new Promise((resolve) =>
            setTimeout(() => {
              try {
                const seen = seenRun();
                resolve(() => seen);
              } catch (error) {
                resolve(() => {
                  throw error;
                });
              }
            }, ms),
          ),
        );
        return seenRun();
      });

    expect(await leaky("alone", 10)).toBe("alone");
    expect((await leftovers[0]!)()).toBeUndefined();

    let release!: () => void;
    const other = runInTaskContext(contextFor("other"), () => new Promise<void>((resolve) => (release = resolve)));
    expect(await leaky("beside", 10)).toBe("beside");
    const beside = await leftovers[1]!;
    release();
    await other;
    expect(beside).toThrow(AxDefinitionError);
    expect(beside).toThrow('after its attempt already ended (run beside, node "node", attempt 1)');
  });
});
