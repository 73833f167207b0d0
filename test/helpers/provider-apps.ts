// A test app whose provider APIs are the fake Paystack and fake Stripe (real HTTP servers on
// 127.0.0.1): both API keys, both webhook secrets and DATA_ENCRYPTION_KEY set, unless `env`
// overrides one (an empty value clears it).
import type { TestContext } from 'node:test';
import { buildTestApp, type TestApp } from './app.ts';
import { FakePaystack } from './fake-paystack.ts';
import { FakeStripe, STRIPE_API_KEY } from './fake-stripe.ts';
import { FakeProviderDeadlines } from './provider-deadlines.ts';
import { PROVIDER_ENV } from './provider-events.ts';

export interface FakeProviders {
  paystack: FakePaystack;
  stripe: FakeStripe;
}

/** Starts both fakes and a test app pointed at them; all stop on `t.after`. */
export async function appWithFakeProviders(
  t: TestContext,
  env: Record<string, string> = {},
  options: { logStream?: NodeJS.WritableStream } = {},
): Promise<TestApp & FakeProviders> {
  const paystack = await FakePaystack.start(t);
  const stripe = await FakeStripe.start(t);
  // A call the fakes leave unanswered times out at once, not after PROVIDER_TIMEOUT.
  const deadlines = new FakeProviderDeadlines();
  paystack.unansweredTo = deadlines;
  stripe.unansweredTo = deadlines;
  const app = await buildTestApp(t, {
    env: { ...PROVIDER_ENV, PAYSTACK_API_URL: paystack.url, STRIPE_API_KEY, STRIPE_API_URL: stripe.url, ...env },
    logStream: options.logStream,
    providerDeadlines: deadlines,
  });
  return Object.assign(app, { paystack, stripe });
}
