// How outbound webhooks reach the network: the DNS resolver and the TLS roots. Production
// uses the system resolver (getaddrinfo, like any connection would) and Node's CA store
// (plus NODE_EXTRA_CA_CERTS); tests swap in a resolver that needs no DNS and a CA for their
// self-signed receivers, per Deps object, without touching anything else of the process.
import { lookup } from 'node:dns/promises';
import type { Resolver } from './webhooks.url-safety.ts';

export interface WebhookNetwork {
  /** Every address of a host name (A and AAAA). */
  resolve: Resolver;
  /**
   * CA certificates (PEM) to trust instead of Node's defaults. Tests only: production leaves
   * it unset and verification always uses the system roots. Never a way to skip verification.
   */
  ca: string | undefined;
}

/** getaddrinfo through Node: `/etc/hosts` and the system's DNS, every address, in its order. */
export const systemResolver: Resolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

const DEFAULT_NETWORK: WebhookNetwork = { resolve: systemResolver, ca: undefined };

const overrides = new WeakMap<object, WebhookNetwork>();

/** Replaces parts of the network settings used with `deps` (tests: resolver, CA). */
export function setWebhookNetwork(deps: object, network: Partial<WebhookNetwork>): void {
  overrides.set(deps, { ...webhookNetwork(deps), ...network });
}

/** The network settings used with `deps`: the system's unless a test set others. */
export function webhookNetwork(deps: object): WebhookNetwork {
  return overrides.get(deps) ?? DEFAULT_NETWORK;
}
