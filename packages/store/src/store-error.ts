import { DrizzleQueryError } from "drizzle-orm";
import { AxStoreError } from "@ax/common";

/** The error to hand on: drizzle's query error becomes an AxStoreError; anything else is returned as is. */
export function toStoreError(error: unknown): unknown {
  return error instanceof DrizzleQueryError ? new AxStoreError(error.cause) : error;
}
