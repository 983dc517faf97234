/**
 * The browser session (cookie + CSRF token) on /v1/session. The cookie is HttpOnly:
 * this module only ever sees the CSRF token and when the session expires.
 */

import { ApiError, csrfHeader, setCsrfToken } from './api';

export interface Session {
  csrfToken: string;
  expiresAt: string;
  /**
   * The user's tenant requires a second factor and the user has none yet: the session
   * may only set one up (`startSecondFactor`, `confirmSecondFactor`) until it is on.
   */
  secondFactorSetupRequired: boolean;
}

/** What the app shows after a session starts, or after a request failed with `code`. */
export type Gate = 'app' | 'second-factor-setup' | 'signed-out' | 'failed';

/** A session that may only set up a second factor gets that screen; any other, the app. */
export function gateOfSession(session: Pick<Session, 'secondFactorSetupRequired'>): Gate {
  return session.secondFactorSetupRequired ? 'second-factor-setup' : 'app';
}

/** Where a failed request leaves the app: the setup screen, signed out, or a failure. */
export function gateOfError(code: string): Gate {
  if (code === 'SECOND_FACTOR_SETUP_REQUIRED') return 'second-factor-setup';
  if (code === 'UNAUTHENTICATED') return 'signed-out';
  return 'failed';
}

interface RestError {
  error?: { code?: string; message?: string; field?: string };
}

/** The session the cookie holds, or null when there is none. */
export async function restoreSession(): Promise<Session | null> {
  const res = await call('GET');
  if (res.status === 401) return null;
  return accept(res);
}

/** Signs in with an API key; a wrong key throws ApiError UNAUTHENTICATED. */
export async function signInWithApiKey(apiKey: string): Promise<Session> {
  return accept(await call('POST', { apiKey }));
}

/**
 * Signs a portal user in with an email and a password, and `code` when the user has a
 * second factor: without it such a user gets ApiError SECOND_FACTOR_REQUIRED; a wrong
 * code is UNAUTHENTICATED.
 */
export async function signInWithPassword(email: string, password: string, code?: string): Promise<Session> {
  return accept(await call('POST', code === undefined ? { email, password } : { email, password, code }));
}

/** A one-time code as typed ("123 456", " 1a2b-3c4d-5e6f-7a8b "), without its spaces. */
export function oneTimeCode(typed: string): string {
  return typed.replace(/\s+/g, '');
}

/** Accepts an invitation (`/portal/invitation#<token>`) with the password chosen; signs in. */
export async function acceptInvitation(token: string, password: string): Promise<Session> {
  return accept(await call('POST', { token, password }, '/v1/session/invitation'));
}

/**
 * Asks for a password-reset link by mail. The server answers the same whether or not the
 * address has an account; it refuses a malformed address, and UNAVAILABLE where it
 * sends no mail.
 */
export async function requestPasswordReset(email: string): Promise<void> {
  const res = await call('POST', { email }, '/v1/session/password-reset');
  if (res.ok) return;
  const err = ((await res.json().catch(() => ({}))) as RestError).error;
  throw new ApiError(err?.code ?? `HTTP_${res.status}`, err?.message ?? `The server answered ${res.status}.`, err?.field);
}

/** The ways of signing in this deployment offers. */
export interface SignInMethods {
  apiKey: boolean;
  password: boolean;
  /** Whether people can ask for a password-reset link by mail. */
  passwordReset: boolean;
  oidc: boolean;
}

/** `GET /v1/session/methods`; an API key only when the server does not say. */
export async function signInMethods(): Promise<SignInMethods> {
  const fallback = { apiKey: true, password: false, passwordReset: false, oidc: false };
  try {
    const res = await fetch('/v1/session/methods', { credentials: 'same-origin', headers: { Accept: 'application/json' } });
    if (!res.ok) return fallback;
    return { ...fallback, ...((await res.json()) as Partial<SignInMethods>) };
  } catch {
    return fallback;
  }
}

/**
 * Signs out; for an operator who came through single sign-on, the identity provider's
 * sign-out address to continue to (it sends the browser back to the console).
 */
export async function signOut(): Promise<string | null> {
  try {
    const res = await call('DELETE');
    if (res.status !== 200) return null;
    const body = (await res.json().catch(() => ({}))) as { logoutUrl?: unknown };
    return typeof body.logoutUrl === 'string' && /^https?:\/\//.test(body.logoutUrl) ? body.logoutUrl : null;
  } finally {
    setCsrfToken('');
  }
}

async function call(method: 'GET' | 'POST' | 'DELETE', body?: unknown, path = '/v1/session'): Promise<Response> {
  const headers: Record<string, string> = { Accept: 'application/json', ...csrfHeader() };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  try {
    return await fetch(path, {
      method,
      credentials: 'same-origin',
      headers,
      body: body === undefined ? null : JSON.stringify(body),
    });
  } catch {
    throw new ApiError('NETWORK', 'The server could not be reached. Check your connection and try again.');
  }
}

async function accept(res: Response): Promise<Session> {
  const body = (await res.json().catch(() => ({}))) as Partial<Session> & RestError;
  if (!res.ok || !body.csrfToken) {
    const err = body.error;
    const code = err?.code ?? (res.status === 401 ? 'UNAUTHENTICATED' : res.status === 429 ? 'RATE_LIMITED' : `HTTP_${res.status}`);
    throw new ApiError(code, err?.message ?? `The server answered ${res.status} to /v1/session.`, err?.field);
  }
  setCsrfToken(body.csrfToken);
  return { csrfToken: body.csrfToken, expiresAt: body.expiresAt ?? '', secondFactorSetupRequired: body.secondFactorSetupRequired === true };
}
