// requestLoggerFactory: at a level above info a request's pino child is made only when a line
// is actually logged, and then logs exactly what the child would (request id, redaction).
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import pino from 'pino';
import { loggerOptions, redactUrl, requestLoggerFactory } from './logger.ts';

function logger(level: string) {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const parent = pino(loggerOptions(level), stream);
  let children = 0;
  const child = parent.child.bind(parent);
  parent.child = ((...args: Parameters<typeof child>) => {
    children += 1;
    return child(...args);
  }) as typeof parent.child;
  const make = () =>
    requestLoggerFactory.call(
      {} as FastifyInstance,
      parent as unknown as FastifyBaseLogger,
      { reqId: 'r-1' },
      {},
      {} as never,
    );
  return { lines, make, children: () => children };
}

test('at warn: no child per request until a warning; the warning carries the request id, redacted', async () => {
  const log = logger('warn');
  const request = log.make();
  request.info({ req: { method: 'GET' } }, 'incoming request');
  request.debug('nothing');
  assert.equal(log.children(), 0, 'nothing logged, no child made');
  request.warn({ headers: { authorization: 'Bearer secret-key' } }, 'careful');
  request.error('broken');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(log.children(), 1, 'one child, made by the first line logged');
  assert.deepEqual(
    log.lines.map((line) => [line.reqId, line.msg, (line.headers as { authorization?: string })?.authorization]),
    [
      ['r-1', 'careful', '[redacted]'],
      ['r-1', 'broken', undefined],
    ],
  );
});

test('at info: the usual child per request (every request logs its lines)', () => {
  const log = logger('info');
  log.make();
  assert.equal(log.children(), 1);
});

test('redactUrl: a portal link token and credential-like query values never reach the logs', () => {
  assert.equal(redactUrl('/portal/open/sS-gRVAOxpVRdhOEM9HKbfuVKQOnlvYFXZ5qPCK64Ik'), '/portal/open/[redacted]');
  assert.equal(redactUrl('/portal/open/abc?x=1&token=t'), '/portal/open/[redacted]?x=1&token=%5Bredacted%5D');
  assert.equal(redactUrl('/i/sS-gRVAOxpVRdhOEM9HKbfuVKQOnlvYFXZ5qPCK64Ik'), '/i/[redacted]');
  assert.equal(redactUrl('/i/sS-gRVAOxpVRdhOEM9HKbfu.pdf'), '/i/[redacted]');
  assert.equal(redactUrl('/i/sS-gRVAOxpVRdhOEM9HKbfu/pay?lang=de'), '/i/[redacted]/pay?lang=de');
  assert.equal(redactUrl('/c/sS-gRVAOxpVRdhOEM9HKbfu'), '/c/[redacted]');
  assert.equal(redactUrl('/console/login/sS-gRVAOxpVRdhOEM9HKbfu'), '/console/login/[redacted]');
  assert.equal(redactUrl('/api/invoices/inv_1'), '/api/invoices/inv_1');
  assert.equal(
    redactUrl('/portal/subscriptions/sub_1/change?plan_id=p'),
    '/portal/subscriptions/sub_1/change?plan_id=p',
  );
  assert.equal(redactUrl('/api/customers'), '/api/customers');
});
