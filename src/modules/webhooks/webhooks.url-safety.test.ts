import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  AllowedCidrs,
  checkWebhookUrl,
  nonPublicReason,
  parseAddress,
  type Resolver,
  UnsafeUrlError,
  vetHost,
} from './webhooks.url-safety.ts';

/** DNS without a network: names map to fixed answers; unknown names do not resolve. */
const DNS: Record<string, string[]> = {
  'example.com': ['93.184.216.34'],
  'v6.example': ['2606:4700::1111'],
  'internal.example': ['10.0.0.5'],
  'mixed.example': ['93.184.216.34', '10.0.0.5'],
  'mapped.example': ['::ffff:127.0.0.1'],
  'metadata.example': ['169.254.169.254'],
  'azure.example': ['168.63.129.16'],
  'empty.example': [],
};
const resolve: Resolver = async (host) => {
  const answer = DNS[host];
  if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return answer;
};
const NONE = new AllowedCidrs([]);

async function rejection(url: string, allowed = NONE): Promise<string> {
  try {
    await checkWebhookUrl(url, resolve, allowed);
  } catch (error) {
    assert.ok(error instanceof UnsafeUrlError, `${url}: ${String(error)}`);
    assert.match(error.message, /^url /, url);
    return error.message;
  }
  assert.fail(`${url} was accepted`);
}

test('the corpus of hostile webhook URLs is rejected', async () => {
  const corpus = [
    'http://example.com/',
    'https://127.0.0.1/',
    'https://localhost/',
    'https://10.1.2.3/',
    'https://[::1]/',
    'https://169.254.169.254/',
    'https://0.0.0.0/',
    'https://2130706433/',
    'https://[::ffff:10.0.0.1]/',
    'https://user:pw@example.com/',
    'not a url',
  ];
  for (const url of corpus) await rejection(url);
  assert.equal(await rejection('http://example.com/'), 'url must use https');
  assert.equal(await rejection('https://user:pw@example.com/'), 'url must not contain credentials');
  assert.match(await rejection('https://127.0.0.1/'), /127\.0\.0\.1 is loopback/);
  assert.match(await rejection('https://[::ffff:10.0.0.1]/'), /private \(embeds 10\.0\.0\.1\)/);
});

test('every spelling of a loopback, private or metadata IPv4 address is rejected', async () => {
  const spellings = [
    // 127.0.0.1: decimal, hex, dotted hex, octal, short forms, percent-encoded, full-width, trailing dot
    'https://2130706433/',
    'https://0x7f000001/',
    'https://0x7f.0.0.1/',
    'https://0x7F.0x0.0x0.0x1/',
    'https://0177.0.0.1/',
    'https://0177.1/',
    'https://017700000001/',
    'https://127.1/',
    'https://127.0.1/',
    'https://%31%32%37.0.0.1/',
    'https://１２７.０.０.１/',
    'https://127.0.0.1./',
    'https://127.0.0.1:8443/hook',
    'https://127.255.255.254/',
    // 10.1.2.3 in other words
    'https://167838211/',
    'https://0xa010203/',
    'https://012.1.2.3/',
    'https://10.66051/',
    'https://10.1.515/',
    // 169.254.169.254
    'https://2852039166/',
    'https://0xa9fea9fe/',
    'https://0251.0376.0251.0376/',
    // 0.0.0.0
    'https://0/',
    'https://0x0/',
  ];
  for (const url of spellings) await rejection(url);
});

test('IPv6 forms that embed a non-public IPv4 address are rejected', async () => {
  const embedded = [
    'https://[::ffff:127.0.0.1]/',
    'https://[::ffff:7f00:1]/',
    'https://[0:0:0:0:0:ffff:127.0.0.1]/',
    'https://[::ffff:10.1.2.3]/',
    'https://[::ffff:a01:203]/',
    'https://[::ffff:169.254.169.254]/',
    'https://[64:ff9b::127.0.0.1]/',
    'https://[64:ff9b::a01:203]/',
    'https://[2002:7f00:1::]/',
    'https://[2002:a01:203::1]/',
    'https://[2002:a9fe:a9fe::]/',
    // IPv4-compatible (deprecated): ipaddr.js calls these unicast; we do not
    'https://[::127.0.0.1]/',
    'https://[::10.0.0.1]/',
    'https://[::a00:1]/',
    'https://[::8.8.8.8]/',
  ];
  for (const url of embedded) await rejection(url);
  assert.match(await rejection('https://[::a00:1]/'), /IPv4-compatible/);
});

test('loopback, private, link-local, CGNAT, multicast and reserved ranges are rejected in both families', async () => {
  const addresses = [
    'https://[::1]/',
    'https://[0:0:0:0:0:0:0:1]/',
    'https://[::]/',
    'https://172.16.0.1/',
    'https://172.31.255.255/',
    'https://192.168.1.1/',
    'https://100.64.0.1/',
    'https://100.127.255.254/',
    'https://224.0.0.1/',
    'https://239.255.255.250/',
    'https://255.255.255.255/',
    'https://240.0.0.1/',
    'https://192.0.0.8/',
    'https://192.0.2.1/',
    'https://198.18.0.1/',
    'https://198.51.100.7/',
    'https://203.0.113.9/',
    'https://192.88.99.1/',
    'https://[fc00::1]/',
    'https://[fd12:3456::1]/',
    'https://[fe80::1]/',
    'https://[fec0::1]/',
    'https://[ff02::1]/',
    'https://[2001:db8::1]/',
    'https://[100::1]/',
    'https://[2001::1]/',
    'https://[64:ff9b:1::1]/',
    'https://[4000::1]/',
    'https://[5f00::1]/',
  ];
  for (const url of addresses) await rejection(url);
});

test('cloud metadata addresses the range library calls unicast are rejected', async () => {
  assert.equal(parseAddress('168.63.129.16')?.range(), 'unicast'); // what ipaddr.js misses
  assert.match(await rejection('https://168.63.129.16/'), /cloud metadata/);
  assert.match(await rejection('https://[::ffff:168.63.129.16]/'), /cloud metadata/);
  assert.match(await rejection('https://100.100.100.200/'), /cloud metadata/);
  assert.match(await rejection('https://[fd00:ec2::254]/'), /cloud metadata/);
  assert.match(await rejection('https://azure.example/'), /cloud metadata/);
  assert.match(await rejection('https://metadata.example/'), /cloud metadata/);
});

test('a name is rejected when ANY of its addresses is not public, or when it does not resolve', async () => {
  assert.match(await rejection('https://internal.example/'), /10\.0\.0\.5 is private/);
  assert.match(await rejection('https://mixed.example/'), /10\.0\.0\.5 is private/);
  assert.match(await rejection('https://mapped.example/'), /loopback/);
  assert.match(await rejection('https://nowhere.example/'), /could not be resolved/);
  assert.match(await rejection('https://empty.example/'), /could not be resolved/);
});

test('localhost names, credentials, other schemes, relative and over-long urls are rejected', async () => {
  for (const url of ['https://localhost:8443/', 'https://LOCALHOST./', 'https://api.localhost/']) {
    assert.equal(await rejection(url), 'url must not point to localhost');
  }
  assert.equal(await rejection('https://:pw@example.com/'), 'url must not contain credentials');
  assert.equal(await rejection('https://user@example.com/'), 'url must not contain credentials');
  assert.equal(await rejection('ftp://example.com/'), 'url must use https');
  assert.equal(await rejection('/relative/path'), 'url must be an absolute https URL');
  assert.equal(await rejection('//example.com/'), 'url must be an absolute https URL');
  const long = `https://example.com/${'a'.repeat(2049 - 'https://example.com/'.length)}`;
  assert.equal(long.length, 2049);
  assert.equal(await rejection(long), 'url must be at most 2048 characters');
  await checkWebhookUrl(long.slice(0, 2048), resolve, NONE);
});

test('public addresses and names pass, including IPv6 forms embedding a public IPv4 address', async () => {
  for (const url of [
    'https://example.com/',
    'https://example.com:8443/hooks?x=1',
    'https://v6.example/',
    'https://93.184.216.34/',
    'https://[2606:4700:4700::1111]/',
    'https://[::ffff:8.8.8.8]/',
    'https://[64:ff9b::8.8.8.8]/',
    'https://[2002:808:808::1]/',
  ]) {
    await checkWebhookUrl(url, resolve, NONE);
  }
});

test('WEBHOOK_ALLOW_PRIVATE_CIDRS is the only way around the rule, and the only way to use http', async () => {
  const allowed = new AllowedCidrs(['127.0.0.1/32', 'fd00::/8']);
  await checkWebhookUrl('https://127.0.0.1:8443/hook', resolve, allowed);
  await checkWebhookUrl('http://127.0.0.1:8080/hook', resolve, allowed);
  await checkWebhookUrl('https://[::ffff:127.0.0.1]/', resolve, allowed);
  await checkWebhookUrl('https://[fd00::5]/', resolve, allowed);
  assert.match(await rejection('https://127.0.0.2/', allowed), /loopback/);
  assert.equal(await rejection('http://example.com/', allowed), 'url must use https');
  assert.equal(await rejection('https://localhost/', allowed), 'url must not point to localhost');
});

test('vetHost returns the vetted addresses to connect to', async () => {
  assert.deepEqual(await vetHost('example.com', 'https:', resolve, NONE), ['93.184.216.34']);
  assert.deepEqual(await vetHost('::ffff:8.8.8.8', 'https:', resolve, NONE), ['::ffff:808:808']);
  await assert.rejects(vetHost('mixed.example', 'https:', resolve, NONE), UnsafeUrlError);
});

test('nonPublicReason names the range', () => {
  const reason = (text: string) => nonPublicReason(parseAddress(text)!);
  assert.equal(reason('8.8.8.8'), undefined);
  assert.equal(reason('10.0.0.1'), 'private');
  assert.equal(reason('100.64.0.1'), 'shared address space (CGNAT)');
  assert.equal(reason('fe80::1'), 'link-local');
  assert.equal(reason('::'), 'unspecified');
});
