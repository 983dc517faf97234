import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { load } from './load.mjs';

const api = await load('src/lib/api.ts');
const doc = { query: 'query Q{viewer{role}}', name: 'Q' };
const realFetch = globalThis.fetch;

function answer(status, body) {
  const calls = [];
  globalThis.fetch = async (url, init) => {
    calls.push({ url, init });
    return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
  };
  return calls;
}

afterEach(() => {
  globalThis.fetch = realFetch;
  api.setCsrfToken('');
});

test('request posts the operation with the CSRF token and the cookie', async () => {
  const calls = answer(200, { data: { viewer: { role: 'OPERATOR' } } });
  api.setCsrfToken('tok');
  const data = await api.request(doc, {});
  assert.deepEqual(data, { viewer: { role: 'OPERATOR' } });
  const { url, init } = calls[0];
  assert.equal(url, '/graphql');
  assert.equal(init.method, 'POST');
  assert.equal(init.credentials, 'same-origin');
  assert.equal(init.headers['X-CSRF-Token'], 'tok');
  assert.equal(init.headers['Content-Type'], 'application/json');
  assert.deepEqual(JSON.parse(init.body), { query: doc.query, operationName: 'Q', variables: {} });
});

test('a GraphQL error becomes an ApiError with code and field', async () => {
  answer(200, { data: null, errors: [{ message: 'input.count: too many', extensions: { code: 'INVALID_INPUT', field: 'input.count' } }] });
  const err = await api.request(doc, {}).catch((e) => e);
  assert.ok(err instanceof api.ApiError);
  assert.equal(err.code, 'INVALID_INPUT');
  assert.equal(err.field, 'input.count');
  assert.ok(api.isFieldError(err, 'count'));
  assert.ok(!api.isFieldError(err, 'labels'));
});

test('UNAUTHENTICATED (also as a bare 401) calls the sign-in handler', async () => {
  let signedOut = 0;
  api.onUnauthenticated(() => signedOut++);
  answer(401, { errors: [{ message: 'sign in', extensions: { code: 'UNAUTHENTICATED' } }] });
  assert.equal((await api.request(doc, {}).catch((e) => e)).code, 'UNAUTHENTICATED');
  globalThis.fetch = async () => new Response('nope', { status: 401 });
  assert.equal((await api.request(doc, {}).catch((e) => e)).code, 'UNAUTHENTICATED');
  assert.equal(signedOut, 2);
});

test('field errors match nested paths by their head', () => {
  const e = new api.ApiError('INVALID_INPUT', 'bad', 'input.labels[0].key');
  assert.ok(api.isFieldError(e, 'labels'));
  assert.ok(!api.isFieldError(new api.ApiError('INVALID_STATE', 'x', 'count'), 'count'));
});

test('an error keeps its other extensions (the alternatives of INSUFFICIENT_CAPACITY)', async () => {
  const alternatives = [{ sku: 's1', skuName: 'h100-eu-west', count: 4, reason: 'fewer units' }];
  answer(200, { data: null, errors: [{ message: 'not enough free capacity', extensions: { code: 'INSUFFICIENT_CAPACITY', alternatives } }] });
  const err = await api.request(doc, {}).catch((e) => e);
  assert.equal(err.code, 'INSUFFICIENT_CAPACITY');
  assert.deepEqual(err.extensions, { alternatives });
  assert.deepEqual(new api.ApiError('X', 'y').extensions, {});
});

const session = await load('src/lib/session.ts');

test('password sign-in sends the one-time code only when there is one', async () => {
  const calls = answer(401, { error: { code: 'SECOND_FACTOR_REQUIRED', message: 'send `code` too' } });
  const err = await session.signInWithPassword('ada@example.com', 'a long passphrase').catch((e) => e);
  assert.equal(err.code, 'SECOND_FACTOR_REQUIRED');
  assert.deepEqual(JSON.parse(calls[0].init.body), { email: 'ada@example.com', password: 'a long passphrase' });
  const again = answer(200, { csrfToken: 'tok', expiresAt: '2026-05-03T14:05:00Z' });
  const s = await session.signInWithPassword('ada@example.com', 'a long passphrase', '123456');
  assert.equal(s.csrfToken, 'tok');
  assert.deepEqual(JSON.parse(again[0].init.body), { email: 'ada@example.com', password: 'a long passphrase', code: '123456' });
});

test('a one-time code is sent without the spaces typed into it', () => {
  assert.equal(session.oneTimeCode(' 123 456 '), '123456');
  assert.equal(session.oneTimeCode('1a2b-3c4d 5e6f-7a8b\n'), '1a2b-3c4d5e6f-7a8b');
});

test('SECOND_FACTOR_SETUP_REQUIRED (also as a REST refusal) calls the setup handler, not the sign-in one', async () => {
  let setup = 0;
  let signedOut = 0;
  api.onSecondFactorSetupRequired(() => setup++);
  api.onUnauthenticated(() => signedOut++);
  answer(200, { data: null, errors: [{ message: 'set one up first', extensions: { code: 'SECOND_FACTOR_SETUP_REQUIRED' } }] });
  const err = await api.request(doc, {}).catch((e) => e);
  assert.equal(err.code, 'SECOND_FACTOR_SETUP_REQUIRED');
  assert.equal(err.message, 'set one up first');
  answer(403, { error: { code: 'SECOND_FACTOR_SETUP_REQUIRED', message: 'your organisation requires a second factor' } });
  const rest = await api.request(doc, {}).catch((e) => e);
  assert.equal(rest.code, 'SECOND_FACTOR_SETUP_REQUIRED');
  assert.equal(rest.message, 'your organisation requires a second factor');
  assert.equal(setup, 2);
  assert.equal(signedOut, 0);
  // Other errors leave it alone.
  answer(200, { data: null, errors: [{ message: 'no', extensions: { code: 'FORBIDDEN' } }] });
  assert.equal((await api.request(doc, {}).catch((e) => e)).code, 'FORBIDDEN');
  assert.equal(setup, 2);
  api.onSecondFactorSetupRequired(() => {});
});

test('a session says whether it may only set up a second factor', async () => {
  answer(200, { csrfToken: 'tok', expiresAt: '2026-05-03T14:05:00Z', role: 'TENANT_MEMBER', secondFactorSetupRequired: true });
  const restricted = await session.signInWithPassword('ada@example.com', 'a long passphrase');
  assert.equal(restricted.secondFactorSetupRequired, true);
  assert.equal(session.gateOfSession(restricted), 'second-factor-setup');
  answer(200, { csrfToken: 'tok', expiresAt: '2026-05-03T14:05:00Z', secondFactorSetupRequired: false });
  const open = await session.restoreSession();
  assert.equal(open.secondFactorSetupRequired, false);
  assert.equal(session.gateOfSession(open), 'app');
  // An older server says nothing: the app, as before.
  answer(200, { csrfToken: 'tok', expiresAt: '2026-05-03T14:05:00Z' });
  const older = await session.restoreSession();
  assert.equal(older.secondFactorSetupRequired, false);
  assert.equal(session.gateOfSession(older), 'app');
});

test('a failed request leaves the app on the setup screen, signed out, or failed', () => {
  assert.equal(session.gateOfError('SECOND_FACTOR_SETUP_REQUIRED'), 'second-factor-setup');
  assert.equal(session.gateOfError('UNAUTHENTICATED'), 'signed-out');
  assert.equal(session.gateOfError('FORBIDDEN'), 'failed');
  assert.equal(session.gateOfError('NETWORK'), 'failed');
});
