import { folded, meantOption } from "@ax/common";
import type { z } from "zod";

/** YAML keys are snake_case; they map onto the camelCase options of DESIGN §2. */
export const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** A YAML path: mapping keys as written, sequence indexes as numbers. */
export type YamlPath = (string | number)[];

/** Records a problem with the key or value at `path`. */
export type Refuse = (path: YamlPath, message: string) => void;

type Schema = z.core.$ZodType;

/** What a YAML mapping holds: options (camelCase name → schema), or names as written, each valued by one schema. */
type Mapping = { kind: "options"; fields: Record<string, Schema | undefined> } | { kind: "names"; value: Schema };

const isMapping = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/** The schema that decides what shape a value has, past optional, default, pipe and the like. */
function unwrap(schema: Schema): Schema {
  const def = (schema as z.core.$ZodTypes)._zod.def;
  switch (def.type) {
    case "optional":
    case "nullable":
    case "default":
    case "prefault":
    case "nonoptional":
    case "readonly":
    case "catch":
      return unwrap(def.innerType);
    case "lazy":
      return unwrap(def.getter());
    case "pipe":
      // A transform of unknown input (options.ts's byType) shows nothing of its shape: `probe` reads it.
      return (def.in as z.core.$ZodTypes)._zod.def.type === "unknown" ? schema : unwrap(def.in);
    default:
      return schema;
  }
}

/**
 * The options of an object schema zod cannot show us (one chosen inside a transform): validating a
 * value means reading each declared key, so an empty object that records its reads lists them.
 */
function probe(schema: Schema): string[] {
  const read = new Set<string>();
  const recorder = new Proxy(
    {},
    {
      get(target, key, receiver) {
        if (typeof key === "string") read.add(key);
        return Reflect.get(target, key, receiver);
      },
    },
  );
  try {
    (schema as z.ZodType).safeParse(recorder);
  } catch {
    // A refinement that assumes a complete value may throw on the empty one; what it read still counts.
  }
  return [...read];
}

function mappingOf(schema: Schema, value: Record<string, unknown>): Mapping | undefined {
  const inner = unwrap(schema);
  const def = (inner as z.core.$ZodTypes)._zod.def;
  switch (def.type) {
    case "object":
      return { kind: "options", fields: def.shape };
    case "record":
      return { kind: "names", value: def.valueType };
    case "union": {
      const discriminator = (def as { discriminator?: string }).discriminator;
      const options = discriminator
        ? def.options.filter((option) => unwrap(option)._zod.propValues?.[discriminator]?.has(value[discriminator] as never))
        : def.options;
      const mappings = options.map((option) => mappingOf(option, value)).filter((m) => m !== undefined);
      // Several object members and no discriminator to choose one: zod reports what is wrong.
      return mappings.length === 1 ? mappings[0] : undefined;
    }
    case "pipe": {
      const keys = probe(inner);
      return keys.length > 0 ? { kind: "options", fields: Object.fromEntries(keys.map((key) => [key, undefined])) } : undefined;
    }
    default:
      return undefined;
  }
}

function elementOf(schema: Schema): Schema | undefined {
  const def = (unwrap(schema) as z.core.$ZodTypes)._zod.def;
  return def.type === "array" ? def.element : undefined;
}

/**
 * `raw` (parsed YAML) with option keys turned into the camelCase the schema declares, names (of
 * tasks, flows, pools, alert groups, webhook headers) kept as written. A key that is not an option
 * there is refused (reported, and left out): a camelCase or otherwise respelt option with the spelling to use (it would
 * otherwise shadow or duplicate the snake_case one), any other with the keys expected there.
 */
export function optionKeys(raw: unknown, schema: Schema, refuse: Refuse, path: YamlPath = []): unknown {
  if (Array.isArray(raw)) {
    const element = elementOf(schema);
    return element ? raw.map((item, i) => optionKeys(item, element, refuse, [...path, i])) : raw;
  }
  if (!isMapping(raw)) return raw;
  const mapping = mappingOf(schema, raw);
  if (!mapping) return raw;
  if (mapping.kind === "names") {
    return Object.fromEntries(
      Object.entries(raw).map(([name, value]) => [name, optionKeys(value, mapping.value, refuse, [...path, name])]),
    );
  }
  const byYamlKey = new Map(Object.keys(mapping.fields).map((option) => [snake(option), option]));
  const known: [string, unknown][] = [];
  for (const [key, value] of Object.entries(raw)) {
    let option = byYamlKey.get(key);
    if (option === undefined) {
      refuse([...path, key], unknownKey(key, [...byYamlKey.keys()], raw));
      // Checked further as the option it respells, unless that is given too; any other unknown key
      // is left out. Either way the schema then reports what else is wrong, not this again.
      const meant = respelt(key, [...byYamlKey.keys()]);
      if (meant === undefined || Object.hasOwn(raw, meant)) continue;
      option = byYamlKey.get(meant)!;
    }
    const field = mapping.fields[option];
    known.push([option, field ? optionKeys(value, field, refuse, [...path, key]) : value]);
  }
  return Object.fromEntries(known);
}

/** The option a key spells another way (`retryBackoff`, `RETRY-BACKOFF`): its value is checked as that option's. */
const respelt = (key: string, expected: string[]) => expected.find((candidate) => folded(candidate) === folded(key));

/** A respelling, or the option a key misspells by a letter or two (`slot`), when only one is that close: named, not assumed. */
function unknownKey(key: string, expected: string[], given: Record<string, unknown>): string {
  const meant = meantOption(key, expected);
  if (meant === undefined) return `unknown key "${key}" (expected one of: ${expected.join(", ")})`;
  return `unknown key; did you mean ${meant}?${Object.hasOwn(given, meant) ? ` (${meant} is given too: remove ${key})` : ""}`;
}

/** The YAML spelling of a path into the value `optionKeys` made of `raw`, to point at the line. */
export function yamlPath(raw: unknown, path: PropertyKey[]): YamlPath {
  let node = raw;
  return path.map((step) => {
    const key = typeof step === "number" ? step : isMapping(node) && Object.hasOwn(node, String(step)) ? String(step) : snake(String(step));
    node = isMapping(node) || Array.isArray(node) ? (node as Record<string | number, unknown>)[key] : undefined;
    return key;
  });
}
