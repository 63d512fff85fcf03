// Child entry of the thread and process executors: task modules may be TypeScript, so register
// tsx in this thread or process before loading anything else. Plain JS so Node can start it as
// is, from the sources and from the build alike.
// Both of tsx's hooks: a `.ts` module of a package without "type": "module" is CommonJS, which
// the ESM hook alone cannot load.
import { register as registerCommonJs } from "tsx/cjs/api";
import { register } from "tsx/esm/api";

register();
registerCommonJs();
// The entry comes from the tree this package resolves to here (the sources under the repository's
// `development` condition, else the build), the same one the task module's imports reach: two
// copies of the worker's modules would give the task an ax.context() the entry never set.
const fromSources = import.meta.resolve("@ax/worker").endsWith(".ts");
await import(
  new URL(fromSources ? "../../src/executors/isolated-entry.ts" : "../../dist/executors/isolated-entry.js", import.meta.url).href
);
