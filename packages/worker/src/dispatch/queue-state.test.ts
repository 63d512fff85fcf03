import { describe, expect, it } from "vitest";
import { LimitBlock } from "./limit-block.js";
import { announced, FETCHERS, found, idle, IDLE_POLL_MS, isReady, sleepMs, type QueueState } from "./queue-state.js";

/** A queue's fetch state as `openQueue` leaves it; the functions under test never touch its BullMQ worker or reason publisher. */
function queue(overrides: Partial<QueueState> = {}): QueueState {
  return {
    name: "default.t",
    task: "t",
    worker: undefined as never,
    reason: undefined as never,
    block: new LimitBlock(),
    idleUntil: 0,
    wakes: 0,
    limited: false,
    fetchWidth: FETCHERS,
    fetching: 0,
    finds: 0,
    emptyAtWakes: -1,
    dueAt: 0,
    ...overrides,
  };
}

describe("whether a job is known to wait in a queue", () => {
  it("a queue found empty knows of none until a job is announced or a fetch finds one", () => {
    const q = queue();
    expect(q.emptyAtWakes === q.wakes).toBe(false);
    idle(q, Date.now());
    expect(q.emptyAtWakes === q.wakes).toBe(true);
    announced(q, 1, undefined);
    expect(q.emptyAtWakes === q.wakes).toBe(false);
    idle(q, Date.now());
    found(q, false);
    expect(q.emptyAtWakes === q.wakes).toBe(false);
  });
});

describe("how many fetches go to a queue at once", () => {
  it("an unlimited queue found empty takes one fetch at a time, and a wake lets through as many as the jobs it announces", () => {
    const q = queue({ fetching: 1 });
    idle(q, Date.now());
    q.fetching = 0;
    expect(q.fetchWidth).toBe(1);
    expect(isReady(q, Date.now())).toBe(false);

    announced(q, 3, undefined);
    expect(q.wakes).toBe(1);
    expect(q.fetchWidth).toBe(3);
    for (let i = 0; i < 3; i++) {
      expect(isReady(q, Date.now())).toBe(true);
      q.fetching++;
    }
    expect(isReady(q, Date.now())).toBe(false);
  });

  it("a wake while fetches are in flight adds its jobs to them", () => {
    const q = queue({ fetchWidth: 1, fetching: 1 });
    announced(q, 2, undefined);
    expect(q.fetchWidth).toBe(3);
    expect(isReady(q, Date.now())).toBe(true);
  });

  it("fetches that keep finding jobs double the width up to the fetchers a process has; a wake never narrows it", () => {
    const q = queue({ fetchWidth: 1 });
    const widths = [];
    for (let i = 0; i < 7; i++) {
      found(q, false);
      widths.push(q.fetchWidth);
    }
    // The first find alone widens nothing, and leaves the next look to the marker BullMQ set again.
    expect(widths).toEqual([1, 2, 4, 8, 16, 16, 16]);
    announced(q, 1, undefined);
    expect(q.fetchWidth).toBe(FETCHERS);
  });

  it("after its first find a queue waits for its marker, which makes it ready again", () => {
    const q = queue({ fetchWidth: 1 });
    found(q, false);
    expect(isReady(q, Date.now())).toBe(false);
    announced(q, 1, 0);
    expect(isReady(q, Date.now())).toBe(true);
    found(q, false);
    expect(isReady(q, Date.now())).toBe(true);
  });

  it("a first find does not wait for a marker this process took while the fetch was in flight", () => {
    const q = queue({ fetchWidth: 1 });
    found(q, true);
    expect(isReady(q, Date.now())).toBe(true);
  });

  it("a queue found empty starts its count of finds again", () => {
    const q = queue({ fetchWidth: 1 });
    found(q, false);
    found(q, false);
    expect(q.fetchWidth).toBe(2);
    idle(q, Date.now());
    expect(q.fetchWidth).toBe(1);
    found(q, false);
    expect(q.fetchWidth).toBe(1);
  });

  it("a wake from a process that does not say how many jobs lets every fetcher through", () => {
    const q = queue({ fetchWidth: 1, idleUntil: Date.now() + IDLE_POLL_MS });
    announced(q, undefined, undefined);
    expect(q.fetchWidth).toBe(FETCHERS);
    expect(q.idleUntil).toBe(0);
  });

  it("a delayed wake makes the queue ready when its jobs fall due, not before", () => {
    const now = Date.now();
    const q = queue({ fetchWidth: 1, idleUntil: now + IDLE_POLL_MS });
    announced(q, 2, now + 200);
    expect(q.idleUntil).toBe(now + 200);
    expect(isReady(q, now)).toBe(false);
    expect(isReady(q, now + 200)).toBe(true);
  });

  it("a first find does not put the next look past a retry announced as due soon (four retries due a few ms apart)", () => {
    const now = Date.now();
    const q = queue({ fetchWidth: 1 });
    announced(q, 1, now + 200);
    announced(q, 1, now + 205);
    // The first falls due and is found; the second's marker may be gone: its due time still counts.
    q.dueAt = now + 205;
    found(q, false);
    expect(q.idleUntil).toBeLessThanOrEqual(now + 205);
    expect(isReady(q, now + 205)).toBe(true);
  });

  it("a fetch that finds nothing does not put the next look past a delayed job announced before it began", () => {
    const now = Date.now();
    const q = queue({ fetchWidth: 1 });
    // The marker of a retry due in 200 ms is taken first; then a fetch begins, for another reason, and finds nothing.
    announced(q, 1, now + 200);
    idle(q, Date.now());
    expect(q.idleUntil).toBe(now + 200);
    expect(isReady(q, now + 200)).toBe(true);
  });

  it("the due time BullMQ answers with an empty fetch is kept; one the fetch began after is forgotten", () => {
    const now = Date.now();
    const q = queue({ fetchWidth: 1 });
    idle(q, now, now + 300);
    expect(q.idleUntil).toBe(now + 300);
    // The fetch at the due time found nothing: another process took the job. Back to the slow poll.
    idle(q, now + 300);
    expect(q.dueAt).toBe(0);
    expect(q.idleUntil).toBeGreaterThanOrEqual(now + IDLE_POLL_MS);
  });

  it("a due time that has passed gives way to the next one announced: the job it announced was taken", async () => {
    const q = queue({ fetchWidth: 1 });
    // A retry due in 20 ms is announced and fetched when due; the node's next retry is announced
    // before any fetch finds the queue empty. It must not wait for the slow poll.
    announced(q, 1, Date.now() + 20);
    await new Promise((resolve) => setTimeout(resolve, 30));
    found(q, false);
    const next = Date.now() + 400;
    announced(q, 1, next);
    idle(q, Date.now());
    expect(q.dueAt).toBe(next);
    expect(q.idleUntil).toBe(next);
  });

  it("a limited queue's width stays what its limits allow: wakes and empty fetches leave it", () => {
    const q = queue({ limited: true, fetchWidth: 2 });
    announced(q, 10, undefined);
    expect(q.fetchWidth).toBe(2);
    idle(q, Date.now());
    expect(q.fetchWidth).toBe(2);
  });

  it("fetchers with no queue to fetch from sleep until the soonest idle queue's poll, skipping queues at their width", () => {
    const now = Date.now();
    const atWidth = queue({ fetchWidth: 1, fetching: 1 });
    const polling = queue({ idleUntil: now + 300 });
    const slept = sleepMs([atWidth, polling]);
    expect(slept).toBeGreaterThan(200);
    expect(slept).toBeLessThanOrEqual(300);
    expect(sleepMs([atWidth])).toBeGreaterThan(IDLE_POLL_MS - 50);
  });
});
