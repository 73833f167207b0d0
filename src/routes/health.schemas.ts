// The health answer, defined once: this TypeBox schema serializes and documents GET /api/health.
import Type, { type Static } from 'typebox';
import { StringEnum } from '../http/schemas.ts';

export const healthSchema = Type.Object(
  {
    status: StringEnum(['ok', 'degraded']),
    database: StringEnum(['ok', 'unavailable']),
    version: Type.String({ description: 'The running release.' }),
  },
  {
    $id: 'Health',
    description: 'Liveness and a database round trip.',
    examples: [{ status: 'ok', database: 'ok', version: '0.1.0' }],
  },
);

export type Health = Static<typeof healthSchema>;
