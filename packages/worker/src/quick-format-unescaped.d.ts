/** pino's message formatter (`%s`, `%d`, `%o`, `%O`, `%j`); the package ships no types. */
declare module "quick-format-unescaped" {
  export default function format(f: unknown, args: unknown[], opts?: { stringify?: (o: unknown) => string }): unknown;
}
