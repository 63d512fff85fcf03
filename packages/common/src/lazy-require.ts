import { createRequire } from "node:module";

/**
 * A CommonJS dependency loaded on first use instead of with the importing module. bullmq, ioredis,
 * prom-client and yaml are some 300 files: a command that only reads the history (`ax runs`)
 * would spend a third of its start loading them. `parentUrl` is the caller's `import.meta.url`,
 * so the name resolves from the caller's own package. Give it only a package whose Node entry is
 * CommonJS even for `import` (bullmq, ioredis, prom-client, yaml), or one no module imports: an
 * `import` elsewhere must get this same instance, not a second copy of the library.
 */
export function lazyRequire<T>(parentUrl: string, specifier: string): () => T {
  const require = createRequire(parentUrl);
  let loaded: T | undefined;
  return () => {
    loaded ??= require(specifier) as T;
    return loaded;
  };
}
