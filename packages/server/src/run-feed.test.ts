import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import { describe, expect, it } from "vitest";
import type { RunInfo } from "@ax/store";
import { RunFeed } from "./run-feed.js";

/** What the feed uses of an SSE response: write, end, and its close event. */
class Client extends EventEmitter {
  chunks: string[] = [];
  ended = false;
  write(chunk: string) {
    this.chunks.push(chunk);
    return true;
  }
  end(chunk?: string) {
    if (chunk) this.chunks.push(chunk);
    this.ended = true;
    this.emit("close");
  }
  get events() {
    return this.chunks.filter((c) => c.startsWith('data: {"')).map((c) => JSON.parse(c.slice(6)) as { status: string });
  }
}

const run = (status: RunInfo["status"]) => ({ id: "r", status }) as RunInfo;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("RunFeed", () => {
  it("reads a watched run once per interval for all its clients and sends only changes", async () => {
    let reads = 0;
    let status: RunInfo["status"] = "running";
    const feed = new RunFeed(
      async () => {
        reads++;
        return run(status);
      },
      () => {},
      20,
    );
    const clients = [new Client(), new Client(), new Client()];
    for (const c of clients) feed.watch("r", c as unknown as ServerResponse);
    await sleep(210);
    expect(feed.watching).toBe(1);
    // ~10 intervals, three clients: one read per interval, not three.
    expect(reads).toBeGreaterThanOrEqual(5);
    expect(reads).toBeLessThanOrEqual(12);
    for (const c of clients) expect(c.events).toEqual([{ id: "r", status: "running" }]);

    status = "success";
    await sleep(60);
    for (const c of clients) {
      expect(c.events.map((e) => e.status)).toEqual(["running", "success"]);
      expect(c.chunks.at(-1)).toBe("event: end\ndata: {}\n\n");
      expect(c.ended).toBe(true);
    }
    expect(feed.watching).toBe(0);
    feed.close();
  });

  it("stops reading a run when its last client leaves", async () => {
    let reads = 0;
    const feed = new RunFeed(
      async () => {
        reads++;
        return run("running");
      },
      () => {},
      10,
    );
    const client = new Client();
    feed.watch("r", client as unknown as ServerResponse);
    await sleep(50);
    client.emit("close");
    const after = reads;
    await sleep(60);
    expect(reads).toBe(after);
    expect(feed.watching).toBe(0);
    feed.close();
  });
});
