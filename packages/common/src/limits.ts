/**
 * The longest idempotency or business key a trigger takes, in characters. Both are indexed, and
 * PostgreSQL refuses an index entry past about 2.7 KB: the Client, the HTTP API and key
 * functions all refuse longer keys before anything is written.
 */
export const MAX_KEY_LENGTH = 512;

/** BullMQ's priority range: 1 is served first, this one last. */
export const MAX_PRIORITY = 2 ** 21 - 1;
