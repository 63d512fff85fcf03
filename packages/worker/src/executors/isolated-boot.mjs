// Child entry of the thread and process executors. Plain JS so Node can start it as is, from the
// sources and from the build alike. The entry comes from the tree this package resolves to here
// (the sources under the repository's `development` condition, else the build), the same one the
// task module's imports reach: two copies of the worker's modules would give the task an
// ax.context() the entry never set. The build loads without tsx; the entry registers it only for
// a TypeScript task module, after loading ax (see loadModule).
const fromSources = import.meta.resolve("@ax/worker").endsWith(".ts");
if (fromSources) {
  // Both of tsx's hooks: a `.ts` module of a package without "type": "module" is CommonJS, which
  // the ESM hook alone cannot load.
  const [esm, cjs] = await Promise.all([import("tsx/esm/api"), import("tsx/cjs/api")]);
  esm.register();
  cjs.register();
}
await import(
  new URL(fromSources ? "../../src/executors/isolated-entry.ts" : "../../dist/executors/isolated-entry.js", import.meta.url).href
);
