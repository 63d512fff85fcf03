/** Options whose value is a duration in milliseconds. */
const DURATIONS = new Set(["retry_backoff", "max_backoff", "timeout", "heartbeat_timeout", "retention"]);

const UNITS: [string, number][] = [
  ["d", 86_400_000],
  ["h", 3_600_000],
  ["m", 60_000],
  ["s", 1000],
];

/** Milliseconds in the largest unit that holds them exactly ("90s", not "1.5m"), as runtime.yaml reads them back. */
export function durationText(ms: number): string {
  if (ms === 0) return "0s";
  const unit = UNITS.find(([, size]) => ms % size === 0);
  return unit ? `${ms / unit[1]}${unit[0]}` : `${ms}ms`;
}

/** Strings YAML reads back as the same string unquoted inside `{ … }`; others ("0 * * * *", "a, b") are quoted. */
const PLAIN = /^[A-Za-z_][\w./-]*$/;
/** Plain words YAML reads as something other than a string. */
const KEYWORD = /^(true|false|null|yes|no|on|off)$/i;

const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * An effective option's value as it would be written in runtime.yaml, so `ax config show` can be
 * read against the file: durations with their unit, a rate limit's window as `per`, keys snake_case.
 */
export function yamlValue(option: string, value: unknown): string {
  if (typeof value === "number" && DURATIONS.has(option)) return durationText(value);
  if (value === null || typeof value !== "object" || Array.isArray(value)) return JSON.stringify(value) ?? "null";
  // Pool names are names, kept as written; the keys of other objects are options.
  const keyOf = option === "pools" ? (key: string) => key : snake;
  const fields = Object.entries(value).map(([key, field]) =>
    key === "perMs" && typeof field === "number"
      ? `per: ${durationText(field)}`
      : `${keyOf(key)}: ${typeof field === "string" && PLAIN.test(field) && !KEYWORD.test(field) ? field : JSON.stringify(field)}`,
  );
  return `{ ${fields.join(", ")} }`;
}
