import { createRequire } from "node:module";

/** pino's message formatter (`%s`, `%d`, `%o`, `%O`, `%j`). Loaded by require: it ships no types. */
const quickFormat = createRequire(import.meta.url)("quick-format-unescaped") as (f: unknown, args: unknown[]) => unknown;
import { maskSecrets } from "@ax/common";
import type { Json, TaskLogLevel } from "@ax/store";
import type { ChildLoggerOptions, Logger } from "pino";

/** One `ax.context().log` call as stored: also what a thread or process child sends its parent. */
export interface CapturedLine {
  /** Epoch ms when it was logged. */
  at: number;
  level: TaskLogLevel;
  msg: string;
  fields: Json | null;
  /** Size counted against the attempt's bound: msg plus fields as JSON, UTF-8. */
  bytes: number;
}

const STORED_LEVEL: Record<string, TaskLogLevel> = {
  trace: "debug",
  debug: "debug",
  info: "info",
  warn: "warn",
  error: "error",
  fatal: "error",
};

function errorJson(error: Error): Json {
  return { name: error.name, message: error.message, stack: error.stack ?? null };
}

/** Fields as JSON whatever the task passed (errors, bigints, cycles), so a log call never throws for storage's sake. */
function toJson(fields: Record<string, unknown>): { json: Json; text: string } {
  try {
    const text = JSON.stringify(fields, (_key, value: unknown) =>
      value instanceof Error ? errorJson(value) : typeof value === "bigint" ? value.toString() : value,
    );
    return { json: JSON.parse(text) as Json, text };
  } catch (error) {
    const json = { unserialisable: (error as Error).message };
    return { json, text: JSON.stringify(json) };
  }
}

/**
 * Stored whatever the process's log level: a quiet stdout (AX_LOG_LEVEL=warn) must not empty the
 * console's log view. debug and trace are stored only where the logger prints them.
 */
const ALWAYS_STORED = new Set(["info", "warn", "error", "fatal"]);

/** pino's call forms: (msg, ...args), (obj, msg?, ...args), (err, msg?, ...args). */
export function captureLine(method: string, args: unknown[], bindings: Record<string, unknown> | undefined): CapturedLine {
  let fields: Record<string, unknown> | undefined = bindings ? { ...bindings } : undefined;
  let rest = args;
  let fallbackMsg = "";
  const first = args[0];
  if (first instanceof Error) {
    fields = { ...fields, err: errorJson(first) };
    rest = args.slice(1);
    fallbackMsg = first.message;
  } else if (first !== null && typeof first === "object") {
    const { msg, ...own } = first as Record<string, unknown>;
    fields = { ...fields, ...own };
    rest = args.slice(1);
    if (typeof msg === "string") fallbackMsg = msg;
  }
  // pino's own formatter, so that the stored line reads as stdout's: `%s` and the like are filled,
  // arguments with no placeholder are left out (node's util.format would append them).
  const formatted: unknown = rest.length > 0 ? quickFormat(rest[0], rest.slice(1)) : undefined;
  const msg = formatted === undefined || formatted === null ? fallbackMsg : String(formatted);
  const stored = fields && Object.keys(fields).length > 0 ? toJson(fields) : undefined;
  return {
    at: Date.now(),
    level: STORED_LEVEL[method] ?? "info",
    msg,
    fields: stored?.json ?? null,
    bytes: Buffer.byteLength(msg) + (stored ? Buffer.byteLength(stored.text) : 0),
  };
}

/**
 * The task's logger: every call still goes to pino (stdout, with the attempt's bindings), and its
 * lines also go to `sink` (see ALWAYS_STORED). Children keep capturing, with their bindings as fields.
 */
export function capturingLogger(log: Logger, sink: (line: CapturedLine) => void, bindings?: Record<string, unknown>): Logger {
  return new Proxy(log, {
    get(target, prop) {
      if (typeof prop === "string" && prop in STORED_LEVEL) {
        return (...args: unknown[]) => {
          if (ALWAYS_STORED.has(prop) || target.isLevelEnabled(prop)) sink(captureLine(prop, args, bindings));
          // Masked as the stored copy is: pino's paths match exact names one level down only, and
          // stdout is what log shipping collects.
          const [first, ...rest] = args;
          const printed = first !== null && typeof first === "object" ? [maskSecrets(first), ...rest] : args;
          return (target[prop as keyof Logger] as (...a: unknown[]) => unknown)(...printed);
        };
      }
      if (prop === "child") {
        return (childBindings: Record<string, unknown>, options?: ChildLoggerOptions<never>) =>
          capturingLogger(target.child(childBindings, options), sink, { ...bindings, ...childBindings });
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
    set(target, prop, value) {
      return Reflect.set(target, prop, value, target);
    },
  });
}

/**
 * `parent.child(bindings)`, made on first use: building a child costs a serialisation of its
 * bindings (and redaction), and most attempts at level warn never log a line.
 */
export function lazyChild(parent: Logger, bindings: Record<string, unknown>): Logger {
  let child: Logger | undefined;
  const made = () => {
    child ??= parent.child(bindings);
    return child;
  };
  return new Proxy({} as Logger, {
    get(_target, prop) {
      const target = made();
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
    set(_target, prop, value) {
      return Reflect.set(made(), prop, value);
    },
    has(_target, prop) {
      return prop in made();
    },
  });
}
