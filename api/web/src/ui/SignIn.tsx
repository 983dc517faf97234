import type { ComponentChildren, ComponentType } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { type ApiError, asApiError } from '../lib/api';
import { oneTimeCode, requestPasswordReset, type Session, type SignInMethods, signInWithApiKey, signInWithPassword } from '../lib/session';
import { Button } from './Button';
import { Field } from './Field';
import { ErrorNotice, Notice } from './Notice';

/** One way to sign in with a form (an API key; an email and a password). */
export interface SignInMethod {
  id: string;
  label: string;
  Form: ComponentType<{ onSignedIn: (session: Session) => void }>;
}

/** A way to sign in that leaves the page (single sign-on): a plain link. */
export interface SignInLink {
  href: string;
  label: string;
}

interface SignInProps {
  appName: string;
  methods: SignInMethod[];
  links?: SignInLink[];
  /** Why the user is here again ("Your session has ended"). */
  notice?: string | null;
  /** Why the last sign-in failed (from the single sign-on callback). */
  error?: string | null;
  onSignedIn: (session: Session) => void;
}

/** The sign-in screen: one form at a time (a switch when there are several) and any links. */
export function SignIn({ appName, methods, links = [], notice, error, onSignedIn }: SignInProps) {
  const [active, setActive] = useState(methods[0]?.id);
  const method = methods.find((m) => m.id === active) ?? methods[0];
  return (
    <SignInCard appName={appName} title="Sign in">
      {error && <Notice tone="danger" title="Sign-in failed">{error}</Notice>}
      {notice && <Notice tone="info">{notice}</Notice>}
      {links.map((link) => (
        <a key={link.href} class="btn btn-primary btn-block" href={link.href}>
          {link.label}
        </a>
      ))}
      {links.length > 0 && methods.length > 0 && <p class="divider">or</p>}
      {methods.length > 1 && (
        <div class="segmented" role="group" aria-label="Sign-in method">
          {methods.map((m) => (
            <button key={m.id} type="button" class="segment" aria-pressed={m.id === method?.id} onClick={() => setActive(m.id)}>
              {m.label}
            </button>
          ))}
        </div>
      )}
      {method && <method.Form onSignedIn={onSignedIn} />}
    </SignInCard>
  );
}

/** The centred card of the signed-out screens; `wide` for one with a QR code and a list. */
export function SignInCard({ appName, title, wide = false, children }: { appName: string; title: string; wide?: boolean; children: ComponentChildren }) {
  return (
    <main id="main" class="signin">
      <div class={wide ? 'signin-card signin-card-wide' : 'signin-card'}>
        <p class="brand brand-large">
          <span class="brand-mark" aria-hidden="true" />
          neocloud <span class="brand-app">{appName}</span>
        </p>
        <h1>{title}</h1>
        {children}
      </div>
    </main>
  );
}

/** Runs a sign-in: pending while it runs, a refusal as a message, other errors as a notice. */
function useSignIn(onSignedIn: (session: Session) => void, refused: string) {
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  /** `handle` takes the errors it knows (true: dealt with) before the usual ones. */
  const run = async (attempt: () => Promise<Session>, handle?: (error: ApiError) => boolean) => {
    setError(null);
    setMessage(null);
    setPending(true);
    try {
      onSignedIn(await attempt());
    } catch (err) {
      const apiError = asApiError(err);
      if (handle?.(apiError)) {
        // dealt with by the form
      } else if (apiError.code === 'UNAUTHENTICATED') setMessage(refused);
      else setError(apiError);
      setPending(false);
    }
  };
  return { pending, error, message, setMessage, run };
}

/** Sign-in with an API key (`nck_…`): the server sets the session cookie. */
export function ApiKeyForm({ onSignedIn }: { onSignedIn: (session: Session) => void }) {
  const [key, setKey] = useState('');
  const s = useSignIn(onSignedIn, 'That API key was not accepted. Check it and try again.');
  const submit = (e: Event) => {
    e.preventDefault();
    if (!key.trim()) return s.setMessage('Enter your API key.');
    void s.run(() => signInWithApiKey(key.trim()));
  };
  return (
    <form onSubmit={submit} noValidate>
      <Field label="API key" name="apiKey" message={s.message} hint="Your key starts with nck_. It is sent once to start a session and never stored in the browser.">
        {(p) => <input {...p} type="password" autocomplete="off" spellcheck={false} value={key} onInput={(e) => setKey(e.currentTarget.value)} />}
      </Field>
      <ErrorNotice error={s.error} />
      <Button type="submit" variant="primary" pending={s.pending} class="btn-block">
        Sign in
      </Button>
    </form>
  );
}

/**
 * Sign-in as a portal user, with an email and a password; when the user has a second
 * factor the server asks for a one-time code (SECOND_FACTOR_REQUIRED), and the form
 * keeps both and asks for it.
 */
export function PasswordForm({ onSignedIn, resetByMail = false }: { onSignedIn: (session: Session) => void; resetByMail?: boolean }) {
  const [forgot, setForgot] = useState(false);
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [needsCode, setNeedsCode] = useState(false);
  const [code, setCode] = useState('');
  const [codeMessage, setCodeMessage] = useState<string | null>(null);
  const s = useSignIn(onSignedIn, 'The email or the password is not right.');
  // Back to the first step (another account, or a mistyped email): the code is asked again.
  const startOver = () => {
    setNeedsCode(false);
    setCode('');
    setCodeMessage(null);
    setPassword('');
  };
  const submit = (e: Event) => {
    e.preventDefault();
    setCodeMessage(null);
    if (!email.trim() || !password) return s.setMessage('Enter your email and your password.');
    if (needsCode && !oneTimeCode(code)) return setCodeMessage('Enter the code from your authenticator app.');
    const handle = (err: ApiError) => {
      if (err.code === 'SECOND_FACTOR_REQUIRED') {
        setNeedsCode(true);
        return true;
      }
      if (err.code === 'UNAUTHENTICATED' && /locked until/i.test(err.message)) {
        // Too many wrong passwords or codes: the server says until when.
        s.setMessage(`${err.message.charAt(0).toUpperCase()}${err.message.slice(1)}.`);
        return true;
      }
      if (needsCode && err.code === 'UNAUTHENTICATED') {
        setCodeMessage('That code was not accepted: it is wrong, used already or expired. Enter the current one.');
        setCode('');
        return true;
      }
      return false;
    };
    void s.run(() => signInWithPassword(email.trim(), password, needsCode ? oneTimeCode(code) : undefined), handle);
  };
  if (forgot) return <ForgotPassword email={email} onBack={() => setForgot(false)} />;
  return (
    <form onSubmit={submit} noValidate>
      <Field label="Email" name="email">
        {(p) => <input {...p} type="email" autocomplete="username" readOnly={needsCode} value={email} onInput={(e) => setEmail(e.currentTarget.value)} />}
      </Field>
      <Field label="Password" name="password" message={s.message}>
        {(p) => <input {...p} type="password" autocomplete="current-password" readOnly={needsCode} value={password} onInput={(e) => setPassword(e.currentTarget.value)} />}
      </Field>
      {needsCode && <CodeField value={code} message={codeMessage} onInput={setCode} onStartOver={startOver} />}
      <ErrorNotice error={s.error} />
      <Button type="submit" variant="primary" pending={s.pending} class="btn-block">
        {needsCode ? 'Verify and sign in' : 'Sign in'}
      </Button>
      {resetByMail && !needsCode && (
        <button type="button" class="link-button" onClick={() => setForgot(true)}>
          Forgot your password?
        </button>
      )}
    </form>
  );
}

/**
 * Asks for a link to set a new password, sent by mail. The answer is the same whether or
 * not the address has an account, and so is what this form says.
 */
function ForgotPassword({ email: typed, onBack }: { email: string; onBack: () => void }) {
  const [email, setEmail] = useState(typed);
  const [message, setMessage] = useState<string | null>(null);
  const [sentTo, setSentTo] = useState<string | null>(null);
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    if (!email.trim()) return setMessage('Enter the email you sign in with.');
    setMessage(null);
    setPending(true);
    try {
      await requestPasswordReset(email.trim());
      setSentTo(email.trim());
    } catch (err) {
      const failure = asApiError(err);
      if (failure.code === 'INVALID_INPUT') setMessage('That is not an email address.');
      else setError(failure);
    } finally {
      setPending(false);
    }
  };
  return (
    <form onSubmit={submit} noValidate aria-label="Forgot your password">
      {sentTo ? (
        <Notice tone="success" title="Check your mail">
          <p>If {sentTo} belongs to an account, a link to set a new password is on its way. It works once, for 24 hours.</p>
        </Notice>
      ) : (
        <>
          <p class="muted">We send a link to set a new password to the email you sign in with.</p>
          <Field label="Email" name="reset-email" message={message}>
            {(p) => <input {...p} type="email" autocomplete="username" value={email} onInput={(e) => setEmail(e.currentTarget.value)} />}
          </Field>
          <ErrorNotice error={error} />
          <Button type="submit" variant="primary" pending={pending} class="btn-block">
            Send me a link
          </Button>
        </>
      )}
      <button type="button" class="link-button" onClick={onBack}>
        Back to sign in
      </button>
    </form>
  );
}

/**
 * The second step: a code from the authenticator app (digits: a phone shows its number
 * pad) or a recovery code (letters too: "Type a recovery code" gives the full keyboard).
 */
function CodeField({ value, message, onInput, onStartOver }: { value: string; message: string | null; onInput: (value: string) => void; onStartOver: () => void }) {
  const field = useRef<HTMLInputElement>(null);
  const [recovery, setRecovery] = useState(false);
  // The step appears after the password was accepted: the focus goes to the code.
  useEffect(() => field.current?.focus(), [recovery]);
  const hint = (
    <>
      {'The 6-digit code your authenticator app shows now. Lost your phone? A recovery code (such as 1a2b-3c4d-5e6f-7a8b) works too. '}
      <button type="button" class="link-button" onClick={() => setRecovery((r) => !r)}>
        {recovery ? 'Type an app code' : 'Type a recovery code'}
      </button>
    </>
  );
  return (
    <>
      <Notice tone="info">Your account has a second factor: enter a one-time code to finish signing in.</Notice>
      <Field label="One-time code" name="code" message={message} hint={hint}>
        {(p) => (
          <input
            {...p}
            ref={field}
            type="text"
            inputMode={recovery ? 'text' : 'numeric'}
            autocomplete="one-time-code"
            autocapitalize="off"
            spellcheck={false}
            maxLength={40}
            value={value}
            onInput={(e) => onInput(e.currentTarget.value)}
          />
        )}
      </Field>
      <p class="field-hint start-over">
        Not you?{' '}
        <button type="button" class="link-button" onClick={onStartOver}>
          Sign in with another account
        </button>
      </p>
    </>
  );
}

export const API_KEY_METHOD: SignInMethod = { id: 'api-key', label: 'API key', Form: ApiKeyForm };
export const PASSWORD_METHOD: SignInMethod = { id: 'password', label: 'Email', Form: PasswordForm };
/** Email and password, with "Forgot your password?" (the deployment sends mail). */
export const PASSWORD_WITH_RESET_METHOD: SignInMethod = { id: 'password', label: 'Email', Form: (p) => <PasswordForm {...p} resetByMail /> };

/** The forms and links an app offers, from what the deployment supports. */
export interface SignInOptions {
  methods: SignInMethod[];
  links: SignInLink[];
}

export function defaultSignIn(available: SignInMethods): SignInOptions {
  return { methods: available.apiKey ? [API_KEY_METHOD] : [], links: [] };
}

/**
 * An API key, and an email and a password (with "Forgot your password?" where the
 * deployment sends mail): the portal's and the provider console's, whose users are people
 * as well as keys.
 */
export function keyOrPasswordSignIn(available: SignInMethods): SignInOptions {
  const password = available.password && (available.passwordReset ? PASSWORD_WITH_RESET_METHOD : PASSWORD_METHOD);
  return { methods: [available.apiKey && API_KEY_METHOD, password].filter((m): m is SignInMethod => !!m), links: [] };
}
