import { execFile } from "node:child_process";
import { promisify } from "node:util";

/** "file:line", the source line and a caret under the column: how Node shows where a syntax error is. */
const FRAME = /^(.+):(\d+)\n.*\n( *)\^/;

/** `file:line:column` from Node's framed report, if `text` starts with one. */
function framed(text: string): string | undefined {
  const match = FRAME.exec(text);
  return match ? `${match[1]}:${match[2]}:${match[3]!.length + 1}` : undefined;
}

/** What `node --check` can read: TypeScript entries go through tsx, whose errors carry their location. */
const JAVASCRIPT = /\.(js|mjs|cjs)$/;

/**
 * Where a JavaScript module's syntax error is, as `file:line:column`. Node puts it in the stack of
 * a CommonJS module's error but not of an ES module's, so for those `node --check` reads the file
 * again and reports it. Undefined when the file itself compiles (the error is in a module it
 * imports, or in how they link: an import of a name a module does not export).
 */
export async function syntaxLocation(error: SyntaxError, path: string): Promise<string | undefined> {
  const inStack = framed(error.stack ?? "");
  if (inStack || !JAVASCRIPT.test(path)) return inStack;
  try {
    await promisify(execFile)(process.execPath, ["--check", path], { timeout: 10_000 });
    return undefined;
  } catch (failed) {
    return framed((failed as { stderr?: string }).stderr ?? "");
  }
}
