// Raw request bodies for a Fastify context: any content type (or none) is read as the exact
// bytes, within the app's body limit (over it → 413). Signatures are checked on these
// bytes, so nothing may parse or re-encode them first (SPEC §5).
import type { FastifyInstance } from 'fastify';

/** Makes `context` (an encapsulated child) read every body as a Buffer. */
export function acceptRawBodies(context: FastifyInstance): void {
  context.removeAllContentTypeParsers();
  context.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
}
