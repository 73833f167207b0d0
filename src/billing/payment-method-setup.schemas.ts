// Adding a payment method without paying an invoice (SPEC §10 "Adding a method"), defined
// once: these TypeBox schemas validate, serialize and document
// POST /api/customers/{id}/payment-methods/setup.
import Type, { type Static } from 'typebox';
import { PROVIDER_NAMES } from '../shared/provider-names.ts';
import { Nullable, StringEnum } from '../http/schemas.ts';
import { MAX_CALLBACK_URL_LENGTH } from './checkout.schemas.ts';

const setupFields = Type.Object(
  {
    provider: Type.Optional(
      StringEnum(PROVIDER_NAMES, { description: 'The provider to save the method at; default DEFAULT_PROVIDER.' }),
    ),
    currency: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z]{3}$',
        description:
          "ISO 4217. Stripe shows the methods usable in it; Paystack's verification charge is made in it. Default: the currency of the customer's latest subscription, else NGN (Paystack) or USD (Stripe).",
        examples: ['NGN'],
      }),
    ),
    return_url: Type.Optional(
      Type.String({
        maxLength: MAX_CALLBACK_URL_LENGTH,
        description:
          'Where the provider sends the customer afterwards (Stripe: also on cancel): an absolute http(s) URL. Default: PUBLIC_URL.',
        examples: ['https://app.example.com/billing/methods'],
      }),
    ),
  },
  { additionalProperties: false },
);

export type PaymentMethodSetupInput = Static<typeof setupFields>;

/** Optional: without a body the link uses DEFAULT_PROVIDER and returns to PUBLIC_URL. */
export const paymentMethodSetupBody = Type.Unsafe<PaymentMethodSetupInput | null>({
  ...Nullable(setupFields),
  description: 'Optional: without a body the link uses DEFAULT_PROVIDER and returns to PUBLIC_URL.',
  examples: [{ provider: 'stripe', currency: 'USD', return_url: 'https://app.example.com/billing/methods' }],
});

export const paymentMethodSetupSchema = Type.Object(
  {
    provider: StringEnum(PROVIDER_NAMES),
    url: Type.String({ description: "The provider's page where the customer enters a method: send them there." }),
    reference: Type.String({
      description:
        "Ours: Stripe's Idempotency-Key and `client_reference_id`, Paystack's transaction reference of the verification charge.",
      examples: ['pms-01JD3Q7Z8X9Y0A1B2C3D4E5F6G'],
    }),
    currency: Type.String({ examples: ['NGN'] }),
    verification_amount: Type.Integer({
      description:
        'Minor units charged to verify the card and refunded in full once it is saved (Paystack); 0 for Stripe, which charges nothing.',
      examples: [5000],
    }),
    expires_at: Type.Optional(
      Type.String({ format: 'date-time', description: 'When the link stops working (Stripe); absent for Paystack.' }),
    ),
  },
  {
    $id: 'PaymentMethodSetup',
    description:
      'A page at the provider where the customer adds a payment method without paying an invoice (SPEC §10).',
    examples: [
      {
        provider: 'paystack',
        url: 'https://checkout.paystack.com/0peioxfhpn',
        reference: 'pms-01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        currency: 'NGN',
        verification_amount: 5000,
      },
    ],
    additionalProperties: false,
  },
);

export type PaymentMethodSetup = Static<typeof paymentMethodSetupSchema>;
