import type { ComponentChildren, ComponentType } from 'preact';
import { useState } from 'preact/hooks';
import { type ApiError, asApiError } from '../lib/api';
import { type Session, type SignInMethods, signInWithApiKey, signInWithPassword } from '../lib/session';
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

/** The centred card of the signed-out screens. */
export function SignInCard({ appName, title, children }: { appName: string; title: string; children: ComponentChildren }) {
  return (
    <main id="main" class="signin">
      <div class="signin-card">
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
  const run = async (attempt: () => Promise<Session>) => {
    setError(null);
    setMessage(null);
    setPending(true);
    try {
      onSignedIn(await attempt());
    } catch (err) {
      const apiError = asApiError(err);
      if (apiError.code === 'UNAUTHENTICATED') setMessage(refused);
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

/** Sign-in as a portal user, with an email and a password. */
export function PasswordForm({ onSignedIn }: { onSignedIn: (session: Session) => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const s = useSignIn(onSignedIn, 'The email or the password is not right.');
  const submit = (e: Event) => {
    e.preventDefault();
    if (!email.trim() || !password) return s.setMessage('Enter your email and your password.');
    void s.run(() => signInWithPassword(email.trim(), password));
  };
  return (
    <form onSubmit={submit} noValidate>
      <Field label="Email" name="email">
        {(p) => <input {...p} type="email" autocomplete="username" value={email} onInput={(e) => setEmail(e.currentTarget.value)} />}
      </Field>
      <Field label="Password" name="password" message={s.message}>
        {(p) => <input {...p} type="password" autocomplete="current-password" value={password} onInput={(e) => setPassword(e.currentTarget.value)} />}
      </Field>
      <ErrorNotice error={s.error} />
      <Button type="submit" variant="primary" pending={s.pending} class="btn-block">
        Sign in
      </Button>
    </form>
  );
}

export const API_KEY_METHOD: SignInMethod = { id: 'api-key', label: 'API key', Form: ApiKeyForm };
export const PASSWORD_METHOD: SignInMethod = { id: 'password', label: 'Email', Form: PasswordForm };

/** The forms and links an app offers, from what the deployment supports. */
export interface SignInOptions {
  methods: SignInMethod[];
  links: SignInLink[];
}

export function defaultSignIn(available: SignInMethods): SignInOptions {
  return { methods: available.apiKey ? [API_KEY_METHOD] : [], links: [] };
}
