import { lazyRequire } from "@ax/common";

/** The YAML parser, loaded by the first config a process reads: a command that reads run history reads none. */
export const yaml = lazyRequire<typeof import("yaml")>(import.meta.url, "yaml");
