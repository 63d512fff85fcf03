/**
 * Error name + message with ids and numbers blanked, so one problem keeps one key across runs: an
 * id after a `_` or `-` (`acc_42`, `job_7f3a2b`, `ORD-ab12cd`, `cus_NffrFeUfNV2Hib`), a long token
 * mixing letters and digits, a letter followed by digits (`u5`, `u11`), uuids, hex and plain numbers. Short
 * names that end in digits (`IPv4`, `sha256`, `db1`) are words of the message and stay.
 */
export function errorFingerprint(error: { name: string; message: string }): string {
  const message = error.message
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, "<id>")
    .replace(/\b0x[0-9a-f]+\b/gi, "<n>")
    // After a separator: anything with a digit, or a long mixed-case token (a random id).
    .replace(
      /([_-])(?:[A-Za-z0-9]*\d[A-Za-z0-9]*|(?=[A-Za-z0-9]{8,}\b)(?=[A-Za-z0-9]*[a-z])(?=[A-Za-z0-9]*[A-Z])[A-Za-z0-9]+)\b/g,
      "$1<id>",
    )
    .replace(/\b(?=[A-Za-z0-9]{8,}\b)(?=[A-Za-z0-9]*\d)(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]+\b/g, "<id>")
    .replace(/\b[A-Za-z]\d+\b/g, "<id>")
    .replace(/\b\d+(?:\.\d+)?/g, "<n>")
    .replace(/\s+/g, " ")
    .trim()
    .slice(0, 200);
  return `${error.name}: ${message}`;
}
