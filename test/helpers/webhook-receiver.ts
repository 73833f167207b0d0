// A real HTTPS webhook receiver for tests (and the bench): a self-signed certificate made
// once per process with openssl, a server on 127.0.0.1 that records every request's raw
// body and headers, and a replaceable behaviour so a test can make it hang, reset, redirect,
// answer late or answer with a huge body.
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { afterTest } from './after.ts';

/** Names the certificate is valid for, besides 127.0.0.1. */
export const RECEIVER_HOST = 'receiver.test';

export interface TestCertificate {
  key: string;
  /** PEM; self-signed, so it is also the CA to trust. */
  cert: string;
}

let certificate: TestCertificate | undefined;

/** A self-signed P-256 certificate for 127.0.0.1 and receiver.test, made once per process. */
export function testCertificate(): TestCertificate {
  if (certificate) return certificate;
  const dir = mkdtempSync(join(tmpdir(), 'webhook-cert-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
        '-days',
        '2',
        '-subj',
        `/CN=${RECEIVER_HOST}`,
        '-addext',
        `subjectAltName=IP:127.0.0.1,DNS:${RECEIVER_HOST}`,
      ],
      { stdio: 'ignore' },
    );
    certificate = {
      key: readFileSync(join(dir, 'key.pem'), 'utf8'),
      cert: readFileSync(join(dir, 'cert.pem'), 'utf8'),
    };
    return certificate;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body, exactly as received. */
  body: string;
  /** performance.timeOrigin + performance.now() at receipt (ms, comparable across processes). */
  receivedAt: number;
}

/** Answers one request; the default answers 200 `ok`. */
export type Behaviour = (request: ReceivedRequest, res: ServerResponse, raw: IncomingMessage) => void;

export interface Receiver {
  /** `https://127.0.0.1:<port>/hook` */
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** Replaces how the receiver answers from now on. */
  behave(behaviour: Behaviour): void;
  /** Resolves once `count` requests have arrived. */
  waitFor(count: number): Promise<void>;
  close(): Promise<void>;
}

export const answer =
  (status: number, body = '', headers: Record<string, string> = {}): Behaviour =>
  (_request, res) => {
    res.writeHead(status, headers);
    res.end(body);
  };

/** Starts a receiver on 127.0.0.1; closed on `t.after` when a test context is given. */
export async function startReceiver(t?: TestContext, behaviour: Behaviour = answer(200, 'ok')): Promise<Receiver> {
  const { key, cert } = testCertificate();
  let current = behaviour;
  const requests: ReceivedRequest[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer({ key, cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const received: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAt: performance.timeOrigin + performance.now(),
      };
      requests.push(received);
      for (const waiter of waiters.filter((w) => requests.length >= w.count)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
      current(received, res, req);
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const receiver: Receiver = {
    url: `https://127.0.0.1:${port}/hook`,
    port,
    requests,
    behave(next) {
      current = next;
    },
    waitFor(count) {
      if (requests.length >= count) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, 'close').catch(() => {});
    },
  };
  if (t) afterTest(t, () => receiver.close());
  return receiver;
}
