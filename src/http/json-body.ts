// The JSON body parser: strict JSON with prototype-poisoning protection, and an empty
// body read as "no body" so `PUT …/cancel` with Content-Type: application/json and no
// body works (SPEC §2). Other content types are answered 415 by Fastify.
import type { FastifyInstance } from 'fastify';
import secureJson from 'secure-json-parse';
import { ValidationError } from './errors.ts';

/** Makes JSON the only accepted body type (Fastify's text/plain parser goes too), parsed by ours. */
export function registerJsonBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' }));
    } catch {
      done(new ValidationError('request body is not valid JSON'), undefined);
    }
  });
}
