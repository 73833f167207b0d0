// A real browser for page tests: Debian's headless Chromium driven by playwright-core
// (`.ci/run` installs the `chromium-headless-shell` package when it is missing). CHROMIUM_PATH
// overrides where the executable is.
import { existsSync } from 'node:fs';
import type { TestContext } from 'node:test';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions } from 'playwright-core';
import { afterTest } from './after.ts';

/**
 * Debian's chromium-headless-shell (the package `chromium-headless-shell`), the binary itself
 * rather than its /usr/bin shell wrapper, so that closing the browser stops it. Measured
 * against the full browser in headless mode (/usr/bin/chromium) on the 2-core machine: ten
 * contexts with a page each cost ≈ 0.8 s of CPU instead of 6–8 s, and ten open pages idle at
 * ≈ 0 instead of ≈ 0.3 s of CPU a second.
 */
const HEADLESS_SHELL = '/usr/lib/chromium/chromium-headless-shell';
const FULL_CHROMIUM = '/usr/bin/chromium';

/**
 * Where Chromium is: CHROMIUM_PATH, else Debian's headless shell, else Debian's full
 * /usr/bin/chromium (the pages behave the same; it only costs more CPU).
 */
export const CHROMIUM_PATH =
  process.env.CHROMIUM_PATH ??
  (existsSync(HEADLESS_SHELL) || !existsSync(FULL_CHROMIUM) ? HEADLESS_SHELL : FULL_CHROMIUM);

/**
 * Launches headless Chromium, with `args` added to its command line. Throws when the
 * executable is missing (install Debian's `chromium-headless-shell`, as `.ci/run` does): a
 * browser test never skips quietly, with or without CI set.
 */
export async function launchChromium(args: string[] = []): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `Chromium not found at ${CHROMIUM_PATH}: apt-get install -y chromium-headless-shell (or set CHROMIUM_PATH)`,
    );
  }
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: ['--no-sandbox', ...args] });
}

/** Launches headless Chromium (launchChromium) for the test `t` and closes it when `t` ends. */
export async function launchBrowser(t: TestContext): Promise<Browser> {
  const browser = await launchChromium();
  afterTest(t, () => browser.close());
  return browser;
}

/**
 * A fresh browser context (own cookies) on `browser`, with playwright's context `options`;
 * closed when `t` ends if given (an open page keeps costing the browser CPU), else with the
 * browser.
 */
export async function newContext(
  browser: Browser,
  t?: TestContext,
  options: BrowserContextOptions = {},
): Promise<BrowserContext> {
  const context = await browser.newContext({ locale: 'en-US', timezoneId: 'UTC', ...options });
  if (t) afterTest(t, () => context.close());
  return context;
}
