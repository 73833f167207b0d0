// The customer portal link (SPEC §16), defined once: these TypeBox schemas validate, serialize
// and document POST /api/customers/{id}/portal-sessions.
import Type, { type Static } from 'typebox';
import { Nullable } from '../../http/schemas.ts';

/** Longest return_url accepted (as checkout's callback_url and webhook urls). */
export const MAX_RETURN_URL_LENGTH = 2048;

const portalSessionFields = Type.Object(
  {
    return_url: Type.Optional(
      Type.String({
        maxLength: MAX_RETURN_URL_LENGTH,
        description:
          'Where the portal\'s "Back" link leads (your app): an absolute http(s) URL without credentials. Default: none.',
        examples: ['https://app.example.com/account'],
      }),
    ),
  },
  { additionalProperties: false },
);

export type PortalSessionInput = Static<typeof portalSessionFields>;

/** Optional: without a body the portal shows no link back. */
export const portalSessionBody = Type.Unsafe<PortalSessionInput | null>({
  ...Nullable(portalSessionFields),
  description: 'Optional: without a body the portal shows no link back.',
  examples: [{ return_url: 'https://app.example.com/account' }],
});

export const portalSessionSchema = Type.Object(
  {
    id: Type.String({ description: 'The link (`bps_…`).' }),
    url: Type.String({
      description:
        'Send the customer there (once, or several times within the hour): it starts a portal session in their browser. Shown only in this answer; we keep only its hash.',
    }),
    expires_at: Type.String({
      format: 'date-time',
      description: 'One hour after it was made: the link and the sessions it started stop working.',
    }),
    return_url: Type.Union([Type.String(), Type.Null()], {
      description: 'As given, serialized by the WHATWG URL parser (`"` → `%22`), or null.',
    }),
  },
  {
    $id: 'PortalSession',
    description: 'A link to the customer portal for one customer, valid one hour (SPEC §16).',
    examples: [
      {
        id: 'bps_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        url: 'https://billing.example.com/portal/open/3q2-7Xb0m1kN9aPZ4s8vYw6tR5uE2iO0lKjHgFdSaQw',
        expires_at: '2026-01-15T11:00:00.000Z',
        return_url: 'https://app.example.com/account',
      },
    ],
  },
);

export type PortalSession = Static<typeof portalSessionSchema>;
