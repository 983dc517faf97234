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
