import { DrizzleQueryError } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { isConnectionError } from "./pg-error.js";
import { toStoreError } from "./store-error.js";
import { AxSchemaNotMigratedError, AxStoreError } from "@ax/common";

describe("toStoreError", () => {
  it("keeps PostgreSQL's message and SQLSTATE, not the query or its parameters", () => {
    const driverError = Object.assign(new Error("unsupported Unicode escape sequence"), { code: "22P05" });
    const error = toStoreError(new DrizzleQueryError("insert into runs select ...", ["another run's secret"], driverError));
    expect(error).toBeInstanceOf(AxStoreError);
    expect(error).toMatchObject({
      code: "22P05",
      message: "PostgreSQL refused the statement: unsupported Unicode escape sequence (SQLSTATE 22P05)",
    });
    expect(String((error as Error).stack)).not.toMatch(/secret|insert into/);
  });

  it("says a server without TLS refuses a URL asking for it, and what to change", () => {
    const error = toStoreError(new DrizzleQueryError("select 1", [], new Error("The server does not support SSL connections")));
    expect((error as Error).message).toMatch(/^PostgreSQL does not accept TLS connections: .*Drop sslmode \(and ssl\) from --storage/);
    expect((error as AxStoreError).unreachable).toBe(false);
  });

  it("still reads as a connection error, so callers retry it", () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
    const error = toStoreError(new DrizzleQueryError("select 1", [], refused));
    expect((error as Error).message).toBe(
      "could not reach PostgreSQL: connect ECONNREFUSED 127.0.0.1:5432 (ECONNREFUSED). Check that it is running and that --storage / DATABASE_URL (the Runtime's or Client's storage option) points at it.",
    );
    expect(isConnectionError(error)).toBe(true);
    // The HTTP API answers 503 for these, 500 for a refused statement.
    expect((error as AxStoreError).unreachable).toBe(true);
    expect(
      (toStoreError(new DrizzleQueryError("select 1", [], Object.assign(new Error("bad"), { code: "22P05" }))) as AxStoreError).unreachable,
    ).toBe(false);
    expect(isConnectionError(toStoreError(new DrizzleQueryError("select 1", [], new Error("Connection terminated unexpectedly"))))).toBe(
      true,
    );
  });

  it("says why a statement was cancelled, and that a server that does not answer is unreachable", () => {
    const cancelled = Object.assign(new Error("canceling statement due to statement timeout"), { code: "57014" });
    const error = toStoreError(new DrizzleQueryError("select 1", [], cancelled)) as AxStoreError;
    expect(error.message).toMatch(
      /^PostgreSQL cancelled the statement: canceling statement due to statement timeout \(SQLSTATE 57014\)\. ax bounds/,
    );
    expect(error.unreachable).toBe(false);
    const silent = toStoreError(new DrizzleQueryError("select 1", [], new Error("Query read timeout"))) as AxStoreError;
    expect(silent.message).toMatch(
      /^PostgreSQL did not answer a statement in time \(Query read timeout\): the server is stopped, overloaded/,
    );
    expect(silent.unreachable).toBe(true);
    expect(isConnectionError(silent)).toBe(true);
  });

  it("says what to fix when the database or the login is refused", () => {
    const noDatabase = Object.assign(new Error('database "nope_db" does not exist'), { code: "3D000" });
    expect((toStoreError(new DrizzleQueryError("select 1", [], noDatabase)) as Error).message).toBe(
      "PostgreSQL has no such database: database \"nope_db\" does not exist (SQLSTATE 3D000). Create it, or fix the database name in --storage / DATABASE_URL (the Runtime's or Client's storage option).",
    );
    const noRole = Object.assign(new Error('role "nobody" does not exist'), { code: "28000" });
    expect((toStoreError(new DrizzleQueryError("select 1", [], noRole)) as Error).message).toMatch(
      /^PostgreSQL refuses the user or password: role "nobody" does not exist \(SQLSTATE 28000\)\. Fix them in --storage \/ DATABASE_URL/,
    );
  });

  it("makes a missing table or column of the guarded schema an AxSchemaNotMigratedError", () => {
    for (const code of ["42P01", "42703"]) {
      const driverError = Object.assign(new Error('relation "runs" does not exist'), { code });
      const error = toStoreError(new DrizzleQueryError("select * from runs where id = $1", ["secret"], driverError), "tenant_a");
      expect(error).toBeInstanceOf(AxSchemaNotMigratedError);
      expect(error).toMatchObject({ schema: "tenant_a", code, cause: driverError });
      expect((error as Error).message).toBe(
        'the database schema "tenant_a" has no ax tables, or is older than this version of ax (relation "runs" does not exist): ' +
          "check the schema name in the URL (?schema=…) first: a typo names a new, empty history; for a new or older one, " +
          "run `ax migrate --storage <url>` or start a Runtime on it, which migrates",
      );
    }
  });

  it("leaves other errors alone", () => {
    const other = new TypeError("x is undefined");
    expect(toStoreError(other)).toBe(other);
  });
});
