import { existsSync, mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";

/** Debian's chromium package (`.ci/run` installs it): no browser download at install time. */
export const CHROMIUM = process.env.AX_CHROMIUM ?? "/usr/bin/chromium";
/** Screenshots, for a person to look at (not committed). */
export const ARTIFACTS = fileURLToPath(new URL("../artifacts/", import.meta.url));
/** The built console the API serves: the browser tests need `pnpm build` first. */
export const CONSOLE_DIST = fileURLToPath(new URL("../../packages/console/dist/index.html", import.meta.url));

/** Refuses to start without the built console or the browser, saying how to get them, before any Runtime starts. */
export function requireConsoleAndBrowser(): void {
  if (!existsSync(CONSOLE_DIST))
    throw new Error("the console is not built: run `npx -y pnpm@9.15.9 --filter @ax/console build` (pnpm test does)");
  if (!existsSync(CHROMIUM)) throw new Error(`no chromium at ${CHROMIUM}: apt-get install -y chromium (.ci/run does), or set AX_CHROMIUM`);
  mkdirSync(ARTIFACTS, { recursive: true });
}

/** Headless Chromium as the tests drive it: no sandbox (root in a container), no small /dev/shm. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
}

/**
 * A screenshot under test/artifacts/ for a person to look at. Not in CI, where no one looks and
 * the two cores are short: some fifty full-page captures cost the suite CPU every other test waits for.
 */
export async function screenshot(page: Page, name: string, options: { fullPage?: boolean } = {}): Promise<void> {
  if (process.env.CI) return;
  await page.screenshot({ path: `${ARTIFACTS}${name}.png`, ...options });
}
