// A real browser for page tests: Debian's headless Chromium driven by playwright-core
// (`.ci/run` installs the `chromium` package when it is missing). CHROMIUM_PATH overrides
// where the executable is.
import { existsSync } from 'node:fs';
import type { TestContext } from 'node:test';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import { afterTest } from './after.ts';

/** Where Chromium is: CHROMIUM_PATH, else Debian's /usr/bin/chromium. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Launches headless Chromium for the test `t` and closes it when `t` ends. Throws when the
 * executable is missing (install Debian's `chromium`, as `.ci/run` does): a browser test
 * never skips quietly.
 */
export async function launchBrowser(t: TestContext): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`Chromium not found at ${CHROMIUM_PATH}: apt-get install -y chromium (or set CHROMIUM_PATH)`);
  }
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: ['--no-sandbox'] });
  afterTest(t, () => browser.close());
  return browser;
}

/** A fresh browser context (own cookies) on `browser`, closed with it. */
export async function newContext(browser: Browser): Promise<BrowserContext> {
  return browser.newContext({ locale: 'en-US', timezoneId: 'UTC' });
}
