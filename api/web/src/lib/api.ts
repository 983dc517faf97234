/**
 * The GraphQL client: one POST per operation to /graphql, with the session cookie and
 * its CSRF token. A GraphQL error becomes a thrown ApiError; UNAUTHENTICATED also
 * tells the app to show the sign-in screen again, and SECOND_FACTOR_SETUP_REQUIRED
 * (the tenant requires a second factor the user has not set up) its setup screen.
 */

import type { Doc } from './doc';

export type ErrorCode =
  | 'INVALID_INPUT'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'INVALID_STATE'
  | 'UNAUTHENTICATED'
  | 'SECOND_FACTOR_SETUP_REQUIRED'
  | 'RATE_LIMITED'
  | 'INVALID_QUERY'
  | 'NETWORK'
  | (string & {});

export class ApiError extends Error {
  readonly code: ErrorCode;
  /** For INVALID_INPUT: the input field at fault ("count", "input.count"). */
  readonly field: string | undefined;
  /** The error's other extensions (INSUFFICIENT_CAPACITY: `alternatives`). */
  readonly extensions: Readonly<Record<string, unknown>>;

  constructor(code: ErrorCode, message: string, field?: string, extensions: Record<string, unknown> = {}) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.field = field;
    this.extensions = extensions;
  }
}

interface GraphQLError {
  message: string;
  extensions?: { code?: string; field?: string } & Record<string, unknown>;
}

interface GraphQLResponse<R> {
  data?: R | null;
  errors?: GraphQLError[];
}

let csrfToken = '';
let unauthenticated: () => void = () => {};
let setupRequired: () => void = () => {};

/** The CSRF token of the current session (empty when signed out). */
export function setCsrfToken(token: string): void {
  csrfToken = token;
}

export function csrfHeader(): Record<string, string> {
  return csrfToken ? { 'X-CSRF-Token': csrfToken } : {};
}

/** What to do when the server says the session is gone. */
export function onUnauthenticated(handler: () => void): void {
  unauthenticated = handler;
}

/**
 * What to do when the server says the session may only set up a second factor (the
 * tenant requires one, and this user has none yet).
 */
export function onSecondFactorSetupRequired(handler: () => void): void {
  setupRequired = handler;
}

export async function request<R, V>(doc: Doc<R, V>, variables: V): Promise<R> {
  const body = await post(doc, variables);
  const first = body.errors?.[0];
  if (first) throw fail(first);
  if (body.data == null) throw new ApiError('INVALID_QUERY', 'The server answered without data.');
  return body.data;
}

async function post<R, V>(doc: Doc<R, V>, variables: V): Promise<GraphQLResponse<R>> {
  let res: Response;
  try {
    res = await fetch('/graphql', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', ...csrfHeader() },
      body: JSON.stringify({ query: doc.query, operationName: doc.name, variables }),
    });
  } catch {
    throw new ApiError('NETWORK', 'The server could not be reached. Check your connection and try again.');
  }
  let body: GraphQLResponse<R> & RestError;
  try {
    body = (await res.json()) as GraphQLResponse<R> & RestError;
  } catch {
    if (res.status === 401) throw fail({ message: 'Your session has ended.', extensions: { code: 'UNAUTHENTICATED' } });
    throw new ApiError('NETWORK', `The server answered ${res.status} ${res.statusText}.`);
  }
  // Refused before GraphQL ran (the REST error shape: `{"error": {"code", "message"}}`).
  const refused = body?.error;
  if (!res.ok && refused?.code && !body.errors) throw fail({ message: refused.message ?? `The server answered ${res.status}.`, extensions: { code: refused.code } });
  return body;
}

interface RestError {
  error?: { code?: string; message?: string };
}

function fail(error: GraphQLError): ApiError {
  const code = error.extensions?.code ?? 'INVALID_QUERY';
  if (code === 'UNAUTHENTICATED') unauthenticated();
  if (code === 'SECOND_FACTOR_SETUP_REQUIRED') setupRequired();
  const { code: _, field, ...rest } = error.extensions ?? {};
  return new ApiError(code, error.message, field, rest);
}

/** Any thrown value as an ApiError (for showing it). */
export function asApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  return new ApiError('NETWORK', e instanceof Error ? e.message : String(e));
}

/**
 * Whether an INVALID_INPUT error is about the form field `name`: the server names
 * `count`, `input.count` or `input.labels[0].key` (which is about `labels`).
 */
export function isFieldError(error: ApiError | null | undefined, name: string): boolean {
  if (!error || error.code !== 'INVALID_INPUT' || !error.field) return false;
  const path = error.field.replace(/^input\./, '');
  const head = path.split(/[.[]/)[0];
  return path === name || head === name;
}
