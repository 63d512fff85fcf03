import { afterAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import pino from "pino";
import { EventPublisher, eventsAfter, eventStreamKey } from "@ax/coordinator";
import { isolate } from "../helpers/isolated.js";
import { captured } from "../helpers/log-capture.js";

const event = (i: number) => ({ name: "task_started" as const, runId: `run-${i}`, flow: "f", businessKey: null, nodeKey: "n", attempt: 1 });

/** The publisher sends a turn's events in one script call; the stream must still hold one entry, and id, per event. */
describe("EventPublisher on real Redis", () => {
  const env = isolate("events");
  const redis = new Redis(env.redis);
  const log = pino({ level: "silent" });

  afterAll(async () => {
    redis.disconnect();
    await env.cleanup();
  });

  it("adds every event of a turn, more than one call's worth, as its own entry in order", async () => {
    const publisher = new EventPublisher(redis, env.prefix, log);
    for (let i = 0; i < 1200; i++) publisher.publish(event(i));
    await publisher.flush();
    const events = await eventsAfter(redis, env.prefix, "0-0", 2000);
    expect(events.map((e) => e.runId)).toEqual(Array.from({ length: 1200 }, (_, i) => `run-${i}`));
    expect(new Set(events.map((e) => e.id)).size).toBe(1200);
    expect(publisher.droppedEvents).toBe(0);
  });

  it("counts the events Redis refuses as dropped, never throws to the publisher, and logs the loss once, then its end", async () => {
    const other = isolate("events_refused");
    const { stream, lines } = captured();
    try {
      // A string where the stream should be: every XADD is refused with WRONGTYPE.
      await redis.set(eventStreamKey(other.prefix), "not a stream");
      const publisher = new EventPublisher(redis, other.prefix, pino(stream));
      for (let i = 0; i < 3; i++) publisher.publish(event(i));
      await publisher.flush();
      expect(publisher.droppedEvents).toBe(3);
      publisher.publish(event(3));
      await publisher.flush();
      expect(publisher.droppedEvents).toBe(4);
      await redis.del(eventStreamKey(other.prefix));
      publisher.publish(event(4));
      await publisher.flush();
      expect(publisher.droppedEvents).toBe(4);
      const logged = lines.map((l) => JSON.parse(l));
      expect(logged.map((l) => [l.msg, l.events, l.heldBack])).toEqual([
        ["Redis refused events; they are dropped", 3, undefined],
        ["Redis takes events again", undefined, 1],
      ]);
      expect(logged[0].err.message).toContain("WRONGTYPE");
    } finally {
      await other.cleanup();
    }
  });
});
