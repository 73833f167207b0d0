// The checkout link (SPEC §10), defined once: these TypeBox schemas validate, serialize and
// document POST /api/invoices/{id}/checkout.
import Type, { type Static } from 'typebox';
import { PROVIDER_NAMES } from '../shared/provider-names.ts';
import { Nullable, StringEnum } from '../http/schemas.ts';

/** Longest callback_url accepted (as webhook urls). */
export const MAX_CALLBACK_URL_LENGTH = 2048;

const checkoutFields = Type.Object(
  {
    provider: Type.Optional(
      StringEnum(PROVIDER_NAMES, { description: 'The provider to collect through; default DEFAULT_PROVIDER.' }),
    ),
    callback_url: Type.Optional(
      Type.String({
        maxLength: MAX_CALLBACK_URL_LENGTH,
        description:
          'Where the provider sends the customer after paying: an absolute http(s) URL. Default: the hosted invoice page.',
        examples: ['https://app.example.com/billing/thanks'],
      }),
    ),
  },
  { additionalProperties: false },
);

export type CheckoutInput = Static<typeof checkoutFields>;

/** Optional: without a body the link uses DEFAULT_PROVIDER and returns to the hosted invoice page. */
export const checkoutBody = Type.Unsafe<CheckoutInput | null>({
  ...Nullable(checkoutFields),
  description: 'Optional: without a body the link uses DEFAULT_PROVIDER and returns to the hosted invoice page.',
  examples: [{ provider: 'paystack', callback_url: 'https://app.example.com/billing/thanks' }],
});

export const checkoutLinkSchema = Type.Object(
  {
    provider: StringEnum(PROVIDER_NAMES),
    url: Type.String({ description: "The provider's payment page: send the customer there." }),
    reference: Type.String({
      description:
        'Ours, unique per link (`pat-…`): the Paystack transaction reference, the Stripe Checkout Session `client_reference_id`.',
    }),
    expires_at: Type.Optional(
      Type.String({
        format: 'date-time',
        description:
          'When the link stops working (Stripe: 24 h by default). Absent when the provider does not say (Paystack).',
      }),
    ),
  },
  {
    $id: 'CheckoutLink',
    description: 'A payment page at the provider for the amount remaining on an open invoice (SPEC §10).',
    examples: [
      {
        provider: 'stripe',
        url: 'https://checkout.stripe.com/c/pay/cs_test_a1YS1URlnyQCN5fUUduORoQ7Pw41PJqDWkIVQCpJPqkfIhd6tVY8XB1OLY',
        reference: 'pat-01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        expires_at: '2026-01-16T10:00:00.000Z',
      },
    ],
  },
);

export type CheckoutLink = Static<typeof checkoutLinkSchema>;
