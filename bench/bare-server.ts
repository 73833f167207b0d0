// The bench baseline: a bare Fastify route returning constant JSON, nothing else (no
// logger, auth, schemas or database). Run as a child of bench/run.ts on HOST:PORT.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
app.get('/', async () => ({ hello: 'world' }));
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
await app.listen({ port: Number(process.env.PORT), host: process.env.HOST ?? '127.0.0.1' });
