import { fileURLToPath } from "node:url";

/** Debian's chromium package (`.ci/run` installs it): no browser download at install time. */
export const CHROMIUM = process.env.AX_CHROMIUM ?? "/usr/bin/chromium";
/** Screenshots, for a person to look at (not committed). */
export const ARTIFACTS = fileURLToPath(new URL("../artifacts/", import.meta.url));
/** The built console the API serves: the browser tests need `pnpm build` first. */
export const CONSOLE_DIST = fileURLToPath(new URL("../../packages/console/dist/index.html", import.meta.url));
