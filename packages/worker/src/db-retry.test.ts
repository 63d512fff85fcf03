import { describe, expect, it } from "vitest";
import { isConnectionError, isTransientDbError, withDbRetry } from "./db-retry.js";
import { AxDbDeadlineError } from "@ax/common";

/** What drizzle throws: its own error, the driver's error as `cause`. */
function drizzleError(cause: unknown): Error {
  return Object.assign(new Error(`Failed query: update node_runs set result = $1\\nparams: ["x"]`), { name: "DrizzleQueryError", cause });
}

describe("isConnectionError", () => {
  it("sees the SQLSTATE of a driver error wrapped by drizzle", () => {
    const adminShutdown = Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" });
    expect(isConnectionError(drizzleError(adminShutdown))).toBe(true);
    expect(isConnectionError(drizzleError(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" })))).toBe(
      true,
    );
    expect(isConnectionError(drizzleError(new Error("Connection terminated unexpectedly")))).toBe(true);
  });

  it("does not retry statement errors, even when the query's data mentions connections", () => {
    const unique = Object.assign(new Error('duplicate key value violates unique constraint "runs_pkey"'), { code: "23505" });
    expect(isConnectionError(drizzleError(unique))).toBe(false);
    const quoting = Object.assign(new Error('Failed query: insert ... params: ["Connection terminated"]'), {
      cause: Object.assign(new Error("syntax error"), { code: "42601" }),
    });
    expect(isConnectionError(quoting)).toBe(false);
    expect(isConnectionError(new TypeError("x is undefined"))).toBe(false);
    expect(isConnectionError(null)).toBe(false);
  });
});

describe("withDbRetry", () => {
  it("retries while the database is unreachable and returns the eventual result", async () => {
    let calls = 0;
    const result = await withDbRetry(async () => {
      calls += 1;
      if (calls < 3) throw drizzleError(Object.assign(new Error("the database system is starting up"), { code: "57P03" }));
      return "written";
    });
    expect(result).toBe("written");
    expect(calls).toBe(3);
  });

  it("rethrows anything else at once", async () => {
    let calls = 0;
    const failing = withDbRetry(async () => {
      calls += 1;
      throw drizzleError(Object.assign(new Error("division by zero"), { code: "22012" }));
    });
    await expect(failing).rejects.toThrow("Failed query");
    expect(calls).toBe(1);
  });
});

describe("withDbRetry with a deadline", () => {
  const unreachable = () => drizzleError(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" }));

  it("stops retrying at the deadline with AxDbDeadlineError carrying the last error", async () => {
    let calls = 0;
    const began = Date.now();
    const failing = withDbRetry(
      async () => {
        calls += 1;
        throw unreachable();
      },
      { until: began + 400 },
    );
    const error = await failing.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AxDbDeadlineError);
    expect((error as AxDbDeadlineError).cause).toBeInstanceOf(Error);
    expect(Date.now() - began).toBeLessThan(1500);
    expect(calls).toBeGreaterThan(1);
  });

  it("keeps its waits short under a deadline: a database back 1.5 s before it is seen", async () => {
    const began = Date.now();
    const backAt = began + 6500;
    let calls = 0;
    const written = await withDbRetry(
      async () => {
        calls += 1;
        if (Date.now() < backAt) throw unreachable();
        return "written";
      },
      { until: began + 8000 },
    );
    expect(written).toBe("written");
    // Waits of 100, 200, 400, 800, then 1000 ms: past 6.5 s within a second.
    expect(Date.now() - backAt).toBeLessThan(1100);
    expect(calls).toBeGreaterThan(5);
  });

  it("abandons a write that hangs past the deadline", async () => {
    const began = Date.now();
    const hanging = withDbRetry(() => new Promise<never>(() => {}), { until: began + 200 });
    await expect(hanging).rejects.toBeInstanceOf(AxDbDeadlineError);
    expect(Date.now() - began).toBeLessThan(1500);
  });

  it("retries what retryIf accepts, such as a serialisation failure", async () => {
    let calls = 0;
    const result = await withDbRetry(
      async () => {
        calls += 1;
        if (calls === 1) throw drizzleError(Object.assign(new Error("could not serialize access"), { code: "40001" }));
        return "written";
      },
      { until: Date.now() + 5000, retryIf: isTransientDbError },
    );
    expect(result).toBe("written");
    expect(isTransientDbError(drizzleError(Object.assign(new Error("bad"), { code: "22P05" })))).toBe(false);
  });
});
