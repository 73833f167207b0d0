import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  AppError,
  ERROR_CODES,
  ERROR_STATUS,
  errorResponse,
  NotFoundError,
  ServiceUnavailableError,
  StateConflictError,
  ValidationError,
} from './errors.ts';

test('every code has one status (SPEC §2), in the Error schema order', () => {
  assert.deepEqual(ERROR_CODES, [
    'validation_error',
    'authentication_error',
    'permission_error',
    'not_found',
    'conflict',
    'idempotency_error',
    'invalid_state',
    'rate_limit_error',
    'internal_error',
  ]);
  assert.deepEqual(ERROR_STATUS, {
    validation_error: 400,
    authentication_error: 401,
    permission_error: 403,
    not_found: 404,
    conflict: 409,
    idempotency_error: 409,
    invalid_state: 422,
    rate_limit_error: 429,
    internal_error: 500,
  });
  for (const code of ERROR_CODES) assert.equal(new AppError(code, 'x').status, ERROR_STATUS[code]);
});

test('a thrown code answers its status in the envelope', () => {
  assert.deepEqual(errorResponse(new AppError('invalid_state', 'plan is archived')), {
    status: 422,
    body: { code: 'invalid_state', message: 'plan is archived', details: null },
  });
  assert.deepEqual(errorResponse(new NotFoundError('customer', 'cus_1')), {
    status: 404,
    body: { code: 'not_found', message: 'customer cus_1 not found', details: null },
  });
});

test('the two-status codes: a state conflict is 409 validation_error, draining is 503 internal_error', () => {
  const conflict = new StateConflictError('subscription cannot be cancelled in its current state');
  assert.ok(conflict instanceof AppError);
  assert.deepEqual(errorResponse(conflict), {
    status: 409,
    body: {
      code: 'validation_error',
      message: 'subscription cannot be cancelled in its current state',
      details: null,
    },
  });
  assert.deepEqual(errorResponse(new ServiceUnavailableError('shutting down')), {
    status: 503,
    body: { code: 'internal_error', message: 'shutting down', details: null },
  });
});

test('a 400 carries both shapes, with the offending field when known', () => {
  const { status, body } = errorResponse(new ValidationError('email is invalid', 'email'));
  assert.equal(status, 400);
  assert.deepEqual(body, {
    code: 'validation_error',
    message: 'email is invalid',
    details: null,
    status: 400,
    title: 'Bad Request',
    detail: 'email is invalid',
    errors: [{ name: 'email', reason: 'email is invalid' }],
  });
});
