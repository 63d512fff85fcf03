/**
 * runtime.yaml against arbitrary text and arbitrary objects: the answer is a config or an
 * AxConfigError that names the file (and the line and key when the problem has one), never
 * another exception.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AxConfigError, parseRuntimeConfig, type RuntimeConfig } from "ax-scheduler";
import { hostileString } from "../../helpers/arbitraries.js";

const FILE = "config/runtime.yaml";
const KNOWN = { tasks: ["create_invoice", "send_notification"], flows: ["order_payment_flow"] };

/** Runs the parser and checks the only two answers it may give. */
function parseOrRefuse(text: string, known?: typeof KNOWN): RuntimeConfig | AxConfigError {
  try {
    return parseRuntimeConfig(text, FILE, known);
  } catch (error) {
    expect(error, String(error)).toBeInstanceOf(AxConfigError);
    const refusal = error as AxConfigError;
    expect(refusal.file).toBe(FILE);
    expect(refusal.message.startsWith(FILE)).toBe(true);
    if (refusal.line !== undefined) expect(refusal.message).toContain(`${FILE}:${refusal.line}:`);
    if (refusal.key) expect(refusal.message).toContain(`: ${refusal.key}: `);
    return refusal;
  }
}

/** Pieces of YAML that stress the parser: anchors, aliases, merges, tags, flow collections, documents. */
const yamlPiece = fc.oneof(
  fc.constantFrom(
    "max_concurrency: 10",
    "pools:",
    "  core_db: 25",
    "tasks:",
    "  create_invoice:",
    "    retries: 3",
    "    timeout: 60s",
    "    retry_on: [InvoiceApiError]",
    "    pool: core_db",
    "flows:",
    "  order_payment_flow:",
    "    max_concurrent_runs: 2",
    "a: &x {retries: 1}",
    "b: *x",
    "<<: *x",
    "c: !!binary aGVsbG8=",
    "d: !custom 1",
    "? complex",
    "- item",
    "---",
    "...",
    "%YAML 1.2",
    "# comment",
    "e: [1, {f: *x}]",
    "\t",
    '"',
    "'",
    "{",
    "]",
  ),
  hostileString,
);
const yamlText = fc
  .array(yamlPiece, { maxLength: 12 })
  .chain((pieces) =>
    fc
      .array(fc.constantFrom("\n", "\n  ", " ", ": ", "\r\n"), { minLength: pieces.length, maxLength: pieces.length })
      .map((gaps) => pieces.map((p, i) => p + gaps[i]).join("")),
  );

const optionKey = fc.constantFrom(
  "retries",
  "retry_backoff",
  "backoff",
  "jitter",
  "max_backoff",
  "retry_on",
  "no_retry_on",
  "timeout",
  "heartbeat_timeout",
  "on_failure",
  "concurrency",
  "rate_limit",
  "pool",
  "queue",
  "executor",
  "resources",
  "max_result_bytes",
  "alert_group",
  "retryBackoff",
);
const optionValue = fc.oneof(
  fc.integer({ min: -5, max: 100 }),
  fc.double(),
  fc.constantFrom("1s", "soon", "fixed", "inline", "core_db", "-1s"),
  hostileString,
  fc.jsonValue({ maxDepth: 2 }),
);
const name = fc.oneof(fc.constantFrom("create_invoice", "send_notification", "order_payment_flow", "core_db"), hostileString);
const configLike = fc.record(
  {
    max_concurrency: optionValue,
    pools: fc.dictionary(name, optionValue, { maxKeys: 3 }),
    tasks: fc.dictionary(name, fc.dictionary(fc.oneof(optionKey, hostileString), optionValue, { maxKeys: 4 }), { maxKeys: 3 }),
    flows: fc.dictionary(
      name,
      fc.dictionary(fc.constantFrom("schedule", "overlap", "max_concurrent_runs", "catch_up"), optionValue, { maxKeys: 2 }),
      { maxKeys: 2 },
    ),
    retention: optionValue,
    alerts: fc.jsonValue({ maxDepth: 2 }),
  },
  { requiredKeys: [] },
);
/** A config-like object, sometimes with unknown top-level keys of any spelling. */
const configObject = fc
  .tuple(configLike, fc.dictionary(hostileString, optionValue, { maxKeys: 2 }))
  .map(([known, unknown]) => ({ ...unknown, ...known }));

describe("runtime.yaml, property-based", () => {
  it("answers arbitrary text with a config or an AxConfigError naming the file and line", () => {
    fc.assert(
      fc.property(yamlText, fc.boolean(), (text, withNames) => {
        parseOrRefuse(text, withNames ? KNOWN : undefined);
      }),
      { numRuns: 500 },
    );
  });

  it("answers arbitrary config-shaped objects with a config or an AxConfigError naming file, line and key", () => {
    fc.assert(
      fc.property(configObject, fc.boolean(), (object, withNames) => {
        // JSON is YAML: one key per line, so every refusal of a key has a line to point at.
        const answer = parseOrRefuse(JSON.stringify(object, null, 2), withNames ? KNOWN : undefined);
        if (answer instanceof AxConfigError && answer.key) expect(answer.line, answer.message).toBeGreaterThan(0);
        // An unknown key always says what to write instead.
        if (answer instanceof AxConfigError && answer.message.includes(": unknown key")) {
          expect(answer.message).toMatch(/: unknown key( ".*" \(expected one of: [a-z_, ]+\)|; did you mean [a-z_]+\?)/s);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("refuses any other spelling of an option (camelCase, dashes, capitals) naming the snake_case key, alone or beside it", () => {
    const respell = fc.constantFrom(
      (key: string) => key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()),
      (key: string) => key.replaceAll("_", "-"),
      (key: string) => key.toUpperCase(),
    );
    const place = fc.constantFrom(
      {
        at: "tasks.create_invoice",
        keys: [
          "retry_backoff",
          "max_backoff",
          "retry_on",
          "no_retry_on",
          "heartbeat_timeout",
          "on_failure",
          "rate_limit",
          "max_result_bytes",
          "alert_group",
        ],
        value: "x",
      },
      { at: "flows.order_payment_flow", keys: ["catch_up", "max_catch_up", "max_concurrent_runs"], value: "x" },
      { at: "tasks.create_invoice.resources", keys: ["memory_mb", "cpu_seconds"], value: 1 },
      { at: "", keys: ["max_concurrency"], value: 1 },
    );
    fc.assert(
      fc.property(place, fc.nat(), respell, fc.constantFrom("alone", "before", "after"), ({ at, keys, value }, i, spell, beside) => {
        const key = keys[i % keys.length]!;
        const other = spell(key);
        const entries: [string, unknown][] =
          beside === "alone"
            ? [[other, value]]
            : beside === "before"
              ? [
                  [other, value],
                  [key, value],
                ]
              : [
                  [key, value],
                  [other, value],
                ];
        const leaf: Record<string, unknown> = Object.fromEntries(entries);
        const object = at ? at.split(".").reduceRight((inner, step) => ({ [step]: inner }), leaf) : leaf;
        const answer = parseOrRefuse(JSON.stringify(object, null, 2), KNOWN);
        expect(answer).toBeInstanceOf(AxConfigError);
        const refusal = answer as AxConfigError;
        const misspelt = at ? `${at}.${other}` : other;
        expect(refusal.message.split("\n").some((line) => line.includes(`: ${misspelt}: unknown key; did you mean ${key}?`))).toBe(true);
        // The refusal points at the file's first problem: the misspelling, unless the right spelling
        // came first, on a line of its own, with a value it does not take.
        if (beside === "after") expect([misspelt, at ? `${at}.${key}` : key]).toContain(refusal.key);
        else expect(refusal.key).toBe(misspelt);
      }),
      { numRuns: 200 },
    );
  });

  it("refuses a file with aliases expanding past any sane size as a config error, not a crash", () => {
    const bomb = [
      "a: &a [x, x, x, x, x, x, x, x, x, x]",
      ...Array.from(
        { length: 8 },
        (_, i) =>
          `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(10)
            .fill(`*${String.fromCharCode(97 + i)}`)
            .join(", ")}]`,
      ),
    ].join("\n");
    expect(parseOrRefuse(bomb)).toBeInstanceOf(AxConfigError);
  });
});
