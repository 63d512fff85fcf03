import { describe, expect, it } from "vitest";
import { reviveError, serialiseError } from "./executors/protocol.js";
import { backoffDelay, CRASHES_REDELIVERED, decideRetry } from "./retry-policy.js";
import { AxAttemptAbandonedError, AxNotJsonError, AxWorkerCrashedError, NonRetryableError, RetryAfterError } from "@ax/common";

type Policy = Parameters<typeof decideRetry>[0];

const policy = (over: Partial<Policy> = {}): Policy => ({
  retries: 5,
  retryBackoffMs: 1000,
  backoff: "exponential",
  jitter: 0,
  maxBackoffMs: 600_000,
  retryOn: null,
  noRetryOn: [],
  ...over,
});

class InvoiceApiError extends Error {
  override name = "InvoiceApiError";
}
class ConfigError extends Error {
  override name = "ConfigError";
}

/** A `random` returning the given values in turn, to pin jitter to its extremes. */
const fixed = (value: number) => () => value;

describe("backoffDelay", () => {
  it("grows exponentially from the base: base, 2x, 4x, 8x", () => {
    const p = policy();
    expect([1, 2, 3, 4].map((n) => backoffDelay(p, n))).toEqual([1000, 2000, 4000, 8000]);
  });

  it("stays at the base with fixed backoff", () => {
    const p = policy({ backoff: "fixed", retryBackoffMs: 300 });
    expect([1, 2, 3, 7].map((n) => backoffDelay(p, n))).toEqual([300, 300, 300, 300]);
  });

  it("applies jitter as ± fraction of the delay, reaching both bounds and the middle", () => {
    const p = policy({ retryBackoffMs: 1000, jitter: 0.2 });
    expect(backoffDelay(p, 1, fixed(0))).toBe(800);
    expect(backoffDelay(p, 1, fixed(0.5))).toBe(1000);
    expect(backoffDelay(p, 1, fixed(0.999999))).toBe(1200);
    expect(backoffDelay(p, 3, fixed(0))).toBe(3200);
    expect(backoffDelay(p, 3, fixed(0.999999))).toBe(4800);
  });

  it("keeps every jittered delay within bounds with the real random source", () => {
    const p = policy({ retryBackoffMs: 500, jitter: 0.3 });
    for (let i = 0; i < 1000; i++) {
      const delay = backoffDelay(p, 2);
      expect(delay).toBeGreaterThanOrEqual(700);
      expect(delay).toBeLessThanOrEqual(1300);
    }
  });

  it("caps a delay at maxBackoff, jitter included", () => {
    const p = policy({ retryBackoffMs: 1000, maxBackoffMs: 5000, jitter: 0.2 });
    expect(backoffDelay(p, 3, fixed(0.5))).toBe(4000);
    expect(backoffDelay(p, 4, fixed(0))).toBe(5000);
    expect(backoffDelay(p, 30, fixed(0.999999))).toBe(5000);
  });

  it("never goes negative, even with full jitter", () => {
    expect(backoffDelay(policy({ jitter: 1 }), 1, fixed(0))).toBe(0);
  });
});

describe("decideRetry", () => {
  it("retries any error by default, with the backoff of the failed attempt", () => {
    expect(decideRetry(policy(), new Error("boom"), 1)).toEqual({ retry: true, delayMs: 1000 });
    expect(decideRetry(policy(), new Error("boom"), 3)).toEqual({ retry: true, delayMs: 4000 });
  });

  it("passes its random source on to the jitter", () => {
    expect(decideRetry(policy({ jitter: 0.5 }), new Error("x"), 1, { random: fixed(0) })).toEqual({ retry: true, delayMs: 500 });
  });

  it("stops when the attempts are exhausted: retries 3 means attempts 1..4", () => {
    const p = policy({ retries: 3 });
    expect(decideRetry(p, new Error("x"), 3).retry).toBe(true);
    expect(decideRetry(p, new Error("x"), 4)).toMatchObject({ retry: false, reason: expect.stringContaining("no retries left") });
    expect(decideRetry(policy({ retries: 0 }), new Error("x"), 1).retry).toBe(false);
  });

  it("does not charge attempts handed back by stopping workers: they neither use up retries nor grow the backoff", () => {
    const p = policy({ retries: 1 });
    expect(decideRetry(p, new Error("x"), 2)).toEqual({ retry: false, reason: "no retries left (retries: 1)", exhausted: true });
    // Attempt 1 was handed back: attempt 2 is the first charged, so one retry is left.
    expect(decideRetry(p, new Error("x"), 2, { uncharged: 1 })).toEqual({ retry: true, delayMs: 1000 });
    expect(decideRetry(p, new Error("x"), 3, { uncharged: 1 }).retry).toBe(false);
    expect(decideRetry(p, new AxWorkerCrashedError("w", 5), 5, { crashesBefore: CRASHES_REDELIVERED, uncharged: 4 }).retry).toBe(true);
    // A refusal for another reason is not about the count.
    expect(decideRetry(p, new NonRetryableError("no"), 2)).toEqual({ retry: false, reason: "the task threw NonRetryableError" });
  });

  it("retries only errors in retryOn, by class", () => {
    const p = policy({ retryOn: [InvoiceApiError] });
    expect(decideRetry(p, new InvoiceApiError("503"), 1).retry).toBe(true);
    expect(decideRetry(p, new ConfigError("no template"), 1)).toMatchObject({ retry: false, reason: "error is not in retryOn" });
    expect(decideRetry(p, new Error("plain"), 1).retry).toBe(false);
  });

  it("decides without throwing when a matcher has no prototype (options refuse one; a throw would leave the outcome unrecorded)", () => {
    const arrow = ((e: { code?: string }) => e.code === "ECONNRESET") as never;
    expect(decideRetry(policy({ retryOn: [arrow] }), new Error("reset"), 1)).toMatchObject({
      retry: false,
      reason: "error is not in retryOn",
    });
    expect(decideRetry(policy({ noRetryOn: [arrow] }), new Error("reset"), 1).retry).toBe(true);
  });

  it("retries only errors in retryOn, by name string, and by name when the class was lost crossing a boundary", () => {
    const byName = policy({ retryOn: ["InvoiceApiError"] });
    expect(decideRetry(byName, new InvoiceApiError("503"), 1).retry).toBe(true);
    expect(decideRetry(byName, new ConfigError("x"), 1).retry).toBe(false);
    const serialised = Object.assign(new Error("503"), { name: "InvoiceApiError" });
    expect(decideRetry(policy({ retryOn: [InvoiceApiError] }), serialised, 1).retry).toBe(true);
    expect(decideRetry(byName, { name: "InvoiceApiError", message: "plain object" }, 1).retry).toBe(true);
  });

  it("matches subclasses of a retryOn class", () => {
    class InvoiceTimeout extends InvoiceApiError {
      override name = "InvoiceTimeout";
    }
    expect(decideRetry(policy({ retryOn: [InvoiceApiError] }), new InvoiceTimeout("slow"), 1).retry).toBe(true);
  });

  it("never retries errors in noRetryOn, by class or by name", () => {
    expect(decideRetry(policy({ noRetryOn: [ConfigError] }), new ConfigError("x"), 1)).toMatchObject({
      retry: false,
      reason: "error is in noRetryOn",
    });
    expect(decideRetry(policy({ noRetryOn: ["ConfigError"] }), new ConfigError("x"), 1).retry).toBe(false);
    expect(decideRetry(policy({ noRetryOn: ["ConfigError"] }), new InvoiceApiError("x"), 1).retry).toBe(true);
  });

  it("matches a class by its chain of class names when the error is not an instance (from a thread or process child)", () => {
    // Plain subclasses: their `name` is Error.prototype's "Error", so only the class tells them apart.
    class AppError extends Error {}
    class MissingSetting extends AppError {}
    const fromChild = reviveError(serialiseError(new MissingSetting("no API key")));
    expect(fromChild).not.toBeInstanceOf(AppError);
    expect(decideRetry(policy({ noRetryOn: [MissingSetting] }), fromChild, 1)).toMatchObject({
      retry: false,
      reason: "error is in noRetryOn",
    });
    expect(decideRetry(policy({ noRetryOn: [AppError] }), fromChild, 1).retry).toBe(false);
    expect(decideRetry(policy({ retryOn: [AppError] }), fromChild, 1).retry).toBe(true);
    expect(decideRetry(policy({ retryOn: [InvoiceApiError] }), fromChild, 1)).toMatchObject({
      retry: false,
      reason: "error is not in retryOn",
    });
    expect(decideRetry(policy({ noRetryOn: [ConfigError] }), reviveError(serialiseError(new Error("plain"))), 1).retry).toBe(true);
  });

  it('matches a plain subclass named "Error" by its class name when it is not an instance (a package loaded twice)', () => {
    const copyA = class ConfigError extends Error {};
    const copyB = class ConfigError extends Error {};
    expect(decideRetry(policy({ noRetryOn: [copyA] }), new copyB("missing setting"), 1).retry).toBe(false);
  });

  it("treats a child's NonRetryableError subclass as final", () => {
    class Fatal extends NonRetryableError {
      override name = "Fatal";
    }
    expect(decideRetry(policy(), reviveError(serialiseError(new Fatal("bad input"))), 1)).toMatchObject({ retry: false });
  });

  it("lets noRetryOn win over retryOn", () => {
    const p = policy({ retryOn: [Error], noRetryOn: [ConfigError] });
    expect(decideRetry(p, new ConfigError("x"), 1).retry).toBe(false);
    expect(decideRetry(p, new InvoiceApiError("x"), 1).retry).toBe(true);
  });

  it("treats NonRetryableError as final whatever the policy", () => {
    const p = policy({ retries: 10, retryOn: [Error] });
    expect(decideRetry(p, new NonRetryableError("card declined"), 1)).toMatchObject({
      retry: false,
      reason: "the task threw NonRetryableError",
    });
    expect(decideRetry(policy(), { name: "NonRetryableError", message: "from a thread" }, 1).retry).toBe(false);
  });

  it("retries a RetryAfterError after exactly its delay: no jitter, no cap, no exponent", () => {
    const p = policy({ jitter: 0.5, maxBackoffMs: 100, retryBackoffMs: 10 });
    expect(decideRetry(p, new RetryAfterError(2500), 3, { random: fixed(0) })).toEqual({ retry: true, delayMs: 2500 });
    expect(decideRetry(p, new RetryAfterError(0), 1)).toEqual({ retry: true, delayMs: 0 });
  });

  it("refuses a RetryAfterError delay it could not keep, saying how to write it", () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, -1000, "2s" as unknown as number]) {
      expect(() => new RetryAfterError(bad)).toThrow(
        /^RetryAfterError\(delayMs\): delayMs must be a finite number of milliseconds, 0 or more, got /,
      );
    }
    expect(new RetryAfterError(0).delayMs).toBe(0);
  });

  it("still counts a RetryAfterError against the attempts", () => {
    expect(decideRetry(policy({ retries: 1 }), new RetryAfterError(100), 2).retry).toBe(false);
  });

  it("does not retry a result that is too large: the same code returns the same data", () => {
    expect(decideRetry(policy(), { name: "AxResultTooLargeError", message: "big" }, 1).retry).toBe(false);
  });

  it("does not retry a value that is not JSON (a result, an ax.once result): the same code makes the same value", () => {
    expect(decideRetry(policy(), new AxNotJsonError("result of task t", "$.conn", "is a Conn"), 1)).toEqual({
      retry: false,
      reason: "a value that is not JSON is the same on every attempt",
    });
  });

  it("matches a YAML name string by the name ax shows: the class name of an error that sets no name", () => {
    class BusinessException extends Error {}
    const thrown = new BusinessException("config missing");
    expect(decideRetry(policy({ noRetryOn: ["BusinessException"] }), thrown, 1)).toEqual({ retry: false, reason: "error is in noRetryOn" });
    expect(decideRetry(policy({ retryOn: ["BusinessException"] }), thrown, 1).retry).toBe(true);
    // Names, not classes: a parent's name does not match, as before.
    class OrderMissing extends BusinessException {}
    expect(decideRetry(policy({ noRetryOn: ["BusinessException"] }), new OrderMissing("x"), 1).retry).toBe(true);
  });

  it("decides the same inline as for the error's revival from a thread or process child", () => {
    class Unnamed extends Error {}
    class RateLimited extends RetryAfterError {}
    const cases: [Policy, unknown][] = [
      // The inherited name "Error" is not the name ax shows ("Unnamed"), as a child's error arrives.
      [policy({ noRetryOn: ["Error"] }), new Unnamed("x")],
      [policy({ retryOn: ["RetryAfterError"] }), new RateLimited(50)],
      // A thrown string is no Error on either side.
      [policy({ retryOn: [Error] }), "plain text"],
    ];
    for (const [p, thrown] of cases) {
      const inline = decideRetry(p, thrown, 1);
      expect(decideRetry(p, reviveError(serialiseError(thrown)), 1)).toEqual(inline);
    }
    expect(decideRetry(policy({ noRetryOn: ["Error"] }), new Unnamed("x"), 1).retry).toBe(true);
    expect(decideRetry(policy({ retryOn: ["RetryAfterError"] }), new RateLimited(50), 1).retry).toBe(false);
    expect(decideRetry(policy({ retryOn: [Error] }), "plain text", 1).retry).toBe(false);
  });

  it("retries a crashed attempt while retries remain, whatever retryOn and noRetryOn say", () => {
    const crash = new AxWorkerCrashedError("w1", 1);
    const narrow = policy({ retries: 1, retryOn: [InvoiceApiError], noRetryOn: [Error] });
    expect(decideRetry(narrow, crash, 1)).toEqual({ retry: true, delayMs: 1000 });
    expect(decideRetry(narrow, crash, 2).retry).toBe(false);
  });

  it("follows a node's first crashes with a new attempt whatever retries says, then counts them against retries", () => {
    const crash = new AxWorkerCrashedError("w1", 1);
    const none = policy({ retries: 0 });
    expect(decideRetry(none, crash, 1, { crashesBefore: 0 }).retry).toBe(true);
    expect(decideRetry(none, crash, 3, { crashesBefore: CRASHES_REDELIVERED - 1 }).retry).toBe(true);
    expect(decideRetry(none, crash, 4, { crashesBefore: CRASHES_REDELIVERED })).toEqual({
      retry: false,
      reason: "no retries left (retries: 0)",
      exhausted: true,
    });
    // Only a dead worker: a task's own failure still needs retries.
    expect(decideRetry(none, new InvoiceApiError("down"), 1, { crashesBefore: 0 }).retry).toBe(false);
  });

  it("retries an attempt its worker gave up (its outcome unrecorded) while retries remain, whatever retryOn and noRetryOn say", () => {
    const abandoned = new AxAttemptAbandonedError("w1", 1);
    const narrow = policy({ retries: 1, retryOn: [InvoiceApiError], noRetryOn: [Error] });
    expect(decideRetry(narrow, abandoned, 1)).toEqual({ retry: true, delayMs: 1000 });
    expect(decideRetry(narrow, abandoned, 2)).toMatchObject({ retry: false, exhausted: true });
    expect(decideRetry(policy({ retries: 0 }), abandoned, 1)).toMatchObject({ retry: false, exhausted: true });
  });
});
