// Screenshots of the operator console for the docs (docs/images/console-*.png), taken with
// headless Chromium (test/helpers/browser.ts's CHROMIUM_PATH) from a running service:
//
//   npx billing demo                      # some data to show
//   node scripts/console-screenshots.ts "$(npx billing console-login --read-only)" cus_… inv_…
//
// The link signs the browser in (read-only is enough); the ids name the customer and the
// invoice to show.
import { chromium } from 'playwright-core';
import { CHROMIUM_PATH } from '../test/helpers/browser.ts';

const [link, customerId, invoiceId] = process.argv.slice(2);
if (!link || !customerId || !invoiceId) {
  process.stderr.write('usage: node scripts/console-screenshots.ts <sign-in link> <customer id> <invoice id>\n');
  process.exit(64);
}
const origin = new URL(link).origin;
const images = new URL('../docs/images/', import.meta.url);
const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: ['--no-sandbox'] });
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, locale: 'en-US', timezoneId: 'UTC' });
  await page.goto(link);
  await page.waitForURL(`${origin}/console`);
  const shots: [string, string][] = [
    ['console-overview.png', '/console'],
    ['console-customer.png', `/console/customers/${customerId}`],
    ['console-invoice.png', `/console/invoices/${invoiceId}`],
  ];
  for (const [file, path] of shots) {
    await page.goto(origin + path);
    await page.screenshot({ path: new URL(file, images).pathname, fullPage: true });
    process.stdout.write(`wrote docs/images/${file}\n`);
  }
} finally {
  await browser.close();
}
