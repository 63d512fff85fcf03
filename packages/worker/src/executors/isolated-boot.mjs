// Child entry of the thread and process executors: task modules may be TypeScript, so register
// tsx in this thread or process before loading anything else. Plain JS so Node can start it as
// is, both next to the sources (isolated-entry.ts) and in the build (isolated-entry.js).
import { existsSync } from "node:fs";
import { register } from "tsx/esm/api";

register();
const source = new URL("./isolated-entry.ts", import.meta.url);
await import(existsSync(source) ? source.href : new URL("./isolated-entry.js", import.meta.url).href);
