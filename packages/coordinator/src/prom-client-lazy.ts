import { lazyRequire } from "@ax/common";

/** prom-client, loaded by the first metric a process creates: a CLI command that reads the history creates none. */
export const promClient = lazyRequire<typeof import("prom-client")>(import.meta.url, "prom-client");
