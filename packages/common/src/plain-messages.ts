/**
 * zod's default messages ("Invalid input: expected number, received NaN", "Too small: expected
 * number to be >0") read like a bug report to a person fixing a YAML file or a flag. Every
 * boundary that passes zod's words on (options, YAML, HTTP, CLI) says them this way instead; a
 * message written by ax itself is left as it is.
 */
const KINDS: Record<string, string> = {
  number: "a number",
  int: "a whole number",
  string: "a string",
  boolean: "true or false",
  object: "an object (a map of keys)",
  record: "a map (name: value entries)",
  array: "a list",
  function: "a function",
  date: "a date",
  bigint: "a whole number",
  undefined: "nothing",
  null: "null",
  nan: "a value that is not a number",
};

const kind = (name: string) => KINDS[name.toLowerCase()] ?? name;

const BOUNDS: Record<string, string> = { ">": "greater than", ">=": "at least", "<": "less than", "<=": "at most" };

const RULES: [RegExp, (...groups: string[]) => string][] = [
  // zod's words for 1.5 given where a whole number belongs.
  [/^Invalid input: expected int, received number$/, () => "expected a whole number, got a fraction"],
  [/^Invalid input: expected (\w+), received undefined$/, (expected) => `missing (${kind(expected!)})`],
  [/^Invalid input: expected (\w+), received (\w+)$/, (expected, received) => `expected ${kind(expected!)}, got ${kind(received!)}`],
  [/^Too (?:small|big): expected (?:number|int|bigint) to be ([<>]=?)(-?[\d.e+]+)$/, (op, n) => `must be ${BOUNDS[op!]} ${n}`],
  [
    /^Too (?:small|big): expected (string|array|set) to have ([<>]=?)(\d+) (characters|items|elements)$/,
    (_, op, n, unit) => `must have ${BOUNDS[op!]} ${n} ${Number(n) === 1 ? unit!.replace(/s$/, "") : unit}`,
  ],
  [/^Unrecognized keys?: (.+)$/, (keys) => `unknown key ${keys}; remove it or check its spelling`],
  [/^Invalid option: expected one of (.+)$/, (options) => `must be one of ${options!.split("|").join(", ")}`],
];

export function plainMessage(message: string): string {
  for (const [pattern, say] of RULES) {
    const found = pattern.exec(message);
    if (found) return say(...found.slice(1));
  }
  return message;
}
