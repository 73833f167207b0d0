import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isHttpUrl } from './urls.ts';

test('isHttpUrl: absolute http(s) URLs without credentials only', () => {
  for (const url of ['https://app.example.com/back', 'http://127.0.0.1:3000/x?y=1#z', 'HTTPS://EXAMPLE.COM']) {
    assert.equal(isHttpUrl(url), true, url);
  }
  for (const url of [
    '/relative',
    'example.com',
    'javascript:alert(1)',
    'data:text/html,x',
    'ftp://example.com/',
    'https://user:pw@example.com/',
    'https://user@example.com/',
    '',
  ]) {
    assert.equal(isHttpUrl(url), false, url);
  }
});
