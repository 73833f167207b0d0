// A test app set up for outbound webhooks: 127.0.0.1 allowed (receivers are local), the
// receivers' self-signed CA trusted, a resolver that needs no DNS, a clock at the real now
// (Standard Webhooks verifiers check timestamps against it), and a dispatcher to drive.
import type { TestContext } from 'node:test';
import type { DispatcherOptions } from '../../src/worker/webhook-dispatcher.ts';
import { WebhookDispatcher } from '../../src/worker/webhook-dispatcher.ts';
import type { Resolver } from '../../src/modules/webhooks/webhooks.url-safety.ts';
import { setWebhookNetwork } from '../../src/modules/webhooks/webhooks.network.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import { buildTestApp, type TestApp } from './app.ts';
import { RECEIVER_HOST, testCertificate } from './webhook-receiver.ts';
import { afterTest } from './after.ts';

/** A public documentation-free address tests use as "the internet" (never contacted). */
export const PUBLIC_ADDRESS = '93.184.216.34';

export interface WebhookTestApp extends TestApp {
  dispatcher: WebhookDispatcher;
  /** Answers of the fake resolver, by host name; change them at will. */
  dns: Map<string, string[]>;
  /** Host names the resolver was asked for, in order. */
  lookups: string[];
  /** A new dispatcher over the same app (a second worker); stopped after the test. */
  newDispatcher(options?: DispatcherOptions): WebhookDispatcher;
}

export interface WebhookTestOptions {
  env?: Record<string, string>;
  dispatcher?: DispatcherOptions;
}

/** The test app, its fake DNS (receiver.test → 127.0.0.1) and a dispatcher (jitter off). */
export async function buildWebhookTestApp(t: TestContext, options: WebhookTestOptions = {}): Promise<WebhookTestApp> {
  const app = await buildTestApp(t, {
    clock: new ManualClock(new Date()),
    env: { WEBHOOK_ALLOW_PRIVATE_CIDRS: '127.0.0.1/32', WEBHOOK_TIMEOUT: '5s', ...options.env },
  });
  const dns = new Map<string, string[]>([[RECEIVER_HOST, ['127.0.0.1']]]);
  const lookups: string[] = [];
  const resolve: Resolver = async (host) => {
    lookups.push(host);
    const answer = dns.get(host);
    if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return answer;
  };
  setWebhookNetwork(app.deps, { resolve, ca: testCertificate().cert });
  const dispatchers: WebhookDispatcher[] = [];
  const newDispatcher = (dispatcherOptions: DispatcherOptions = {}) => {
    const dispatcher = new WebhookDispatcher(app.deps, {
      random: () => 0.5,
      ...options.dispatcher,
      ...dispatcherOptions,
    });
    dispatchers.push(dispatcher);
    return dispatcher;
  };
  const dispatcher = newDispatcher();
  afterTest(t, () => Promise.all(dispatchers.map((d) => d.stop({ graceMs: 0 }))));
  return { ...app, dispatcher, dns, lookups, newDispatcher };
}
