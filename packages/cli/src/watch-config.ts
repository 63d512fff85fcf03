import { watch } from "node:fs";
import { readFile } from "node:fs/promises";
import { basename, dirname } from "node:path";
import type { Logger } from "pino";
import { AxConfigError } from "@ax/common";
import type { LiveConfig } from "ax-scheduler";

/** Editors save in bursts (write, rename, chmod): one apply per burst. */
const DEBOUNCE_MS = 250;

/**
 * `ax dev`: applies the config file now and on every save, as a new stored version every process
 * follows. A file that does not validate is logged with file, line, column and key, and the
 * version in force stays. Returns a function that stops watching.
 */
export function watchConfigFile(file: string, live: LiveConfig, author: string, log: Logger): () => void {
  let timer: NodeJS.Timeout | undefined;
  let applying = Promise.resolve();
  const applyNow = async () => {
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (error) {
      log.warn({ file, err: error }, "cannot read the config file; the version in force stays");
      return;
    }
    try {
      if ((await live.current())?.yaml === text) return;
      const version = await live.apply(text, file, author);
      log.info({ file, version: version.version }, `config file applied as version ${version.version}`);
    } catch (error) {
      if (error instanceof AxConfigError)
        log.error({ file, line: error.line, column: error.column, key: error.key }, `${error.message}; the version in force stays`);
      else log.warn({ file, err: error }, "could not apply the config file; save it again to retry");
    }
  };
  const schedule = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      applying = applying.then(applyNow);
    }, DEBOUNCE_MS);
  };
  // The directory, not the file: editors that save by renaming a new file over it end a file watch.
  const watcher = watch(dirname(file), (_event, name) => {
    if (name === basename(file)) schedule();
  });
  applying = applying.then(applyNow);
  return () => {
    clearTimeout(timer);
    watcher.close();
  };
}
