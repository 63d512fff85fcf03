// Names that become part of Redis keys, metric labels or SQL identifiers: every way in holds them to the same rule.

/**
 * A worker group's name: it becomes part of Redis keys and metric labels, so code, YAML, Runtime
 * options and CLI flags all hold it to the same characters.
 */
export const QUEUE_NAME = /^[A-Za-z0-9_-]+$/;
export const QUEUE_NAME_RULE = "use letters, digits, _ and -";

/** A PostgreSQL schema ax keeps its history in (`?schema=` of a storage URL): quoted nowhere, so plain. */
export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
export const SCHEMA_NAME_RULE = "use lower-case letters, digits and _ only (a name of 1-63 characters, not starting with a digit)";

/** An API token's name: shown in the audit log and typed on the command line to revoke it. */
export const TOKEN_NAME = /^[A-Za-z0-9_.:-]{1,64}$/;
export const TOKEN_NAME_RULE = "1-64 letters, digits, _ . : -";
