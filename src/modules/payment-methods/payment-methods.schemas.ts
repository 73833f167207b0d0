// A saved payment method as the API shows it (SPEC §10), defined once: the routes under
// /api/customers/{id}/payment-methods return it and `payment_method.attached` / `.detached`
// carry it. Display fields only: the credential, fingerprint, provider customer id and the
// provider's email of the method never leave the module (a new column never leaks either:
// every view goes through pickFields of this schema).
import Type, { type Static } from 'typebox';
import { PROVIDER_NAMES } from '../../shared/provider-names.ts';
import { Nullable, nullableTimestamp, pageOf, StringEnum, timestamp } from '../../http/schemas.ts';
import { PAYMENT_METHOD_STATUSES } from '../../db/tables/payment-methods.table.ts';

/** The fields `sort_by` may name on GET /api/customers/{id}/payment-methods. */
export const PAYMENT_METHOD_SORT_FIELDS = ['created_at'] as const;

export const paymentMethodSchema = Type.Object(
  {
    id: Type.String({ examples: ['pm_01JD3Q7Z8X9Y0A1B2C3D4E5F6G'] }),
    customer_id: Type.String(),
    provider: StringEnum(PROVIDER_NAMES),
    status: StringEnum(PAYMENT_METHOD_STATUSES, {
      description: '`active`: the service may charge it; `detached`: removed (DELETE), never charged again.',
    }),
    type: Type.String({ description: '`card`, `bank`, … (Paystack `channel`, Stripe payment method type).' }),
    brand: Nullable(Type.String({ description: '`visa`, `mastercard`, `verve`, … lower case; null when unknown.' })),
    last4: Nullable(Type.String()),
    exp_month: Nullable(Type.Integer({ minimum: 1, maximum: 12 })),
    exp_year: Nullable(Type.Integer()),
    default: Type.Boolean({
      description:
        'The method automatic charges use: the live method saved (or chosen with PATCH) last. Always false once detached.',
    }),
    created_at: timestamp,
    detached_at: nullableTimestamp,
  },
  {
    $id: 'PaymentMethod',
    description:
      "A customer's reusable card or account at a provider, saved from a succeeded payment (SPEC §10). The provider credential is never shown.",
    examples: [
      {
        id: 'pm_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        customer_id: 'cus_01JD3Q7Z8X9Y0A1B2C3D4E5F6G',
        provider: 'paystack',
        status: 'active',
        type: 'card',
        brand: 'visa',
        last4: '4081',
        exp_month: 12,
        exp_year: 2030,
        default: true,
        created_at: '2026-01-15T10:00:00.000Z',
        detached_at: null,
      },
    ],
  },
);

/** A payment method as the API returns it. */
export type PaymentMethod = Static<typeof paymentMethodSchema>;

export const paymentMethodListSchema = pageOf('PaymentMethodList', paymentMethodSchema);

export const paymentMethodParams = Type.Object({
  id: Type.String({ maxLength: 64, description: 'The customer (`cus_…`)' }),
  pm: Type.String({ maxLength: 64, description: 'The payment method (`pm_…`)' }),
});

export const updatePaymentMethodBody = Type.Object(
  {
    default: Type.Boolean({
      description: '`true` makes this method the default. `false` is refused: make another method the default instead.',
    }),
  },
  { additionalProperties: false, examples: [{ default: true }] },
);

export type UpdatePaymentMethodInput = Static<typeof updatePaymentMethodBody>;
