import type { ComponentType } from 'preact';
import { useState } from 'preact/hooks';
import { type ApiError, asApiError } from '../lib/api';
import { acceptInvitation, type Session } from '../lib/session';
import { Button } from '../ui/Button';
import { Field, unclaimed } from '../ui/Field';
import { ErrorNotice } from '../ui/Notice';
import { SignInCard } from '../ui/SignIn';

const MIN = 12;
const MAX = 128;

/**
 * `/portal/invitation#<token>` (`/provider/invitation#<token>` for a provider's users): an
 * invited person chooses a password, or someone given a password-reset link (by an admin,
 * a colleague or mail) sets a new one; either way they are signed in.
 */
export function Invitation({ appName, token, onSignedIn }: { appName: string; token: string; onSignedIn: (session: Session) => void }) {
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [problem, setProblem] = useState<{ password?: string; confirm?: string }>({});
  const [error, setError] = useState<ApiError | null>(null);
  const [pending, setPending] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const found = check(password, confirm);
    setProblem(found);
    if (found.password || found.confirm) return;
    setPending(true);
    setError(null);
    try {
      onSignedIn(await acceptInvitation(token, password));
    } catch (err) {
      setError(asApiError(err));
      setPending(false);
    }
  };
  return (
    <SignInCard appName={appName} title="Choose your password">
      <p class="muted">Invited, or given a link to reset your password? Choose the password you sign in with, together with your email, from now on. After a reset, your other sessions end.</p>
      <form onSubmit={submit} noValidate>
        <Field label="Password" name="password" hint={`${MIN} to ${MAX} characters.`} error={error} message={problem.password}>
          {(p) => <input {...p} type="password" autocomplete="new-password" value={password} onInput={(e) => setPassword(e.currentTarget.value)} />}
        </Field>
        <Field label="Password again" name="confirm" message={problem.confirm}>
          {(p) => <input {...p} type="password" autocomplete="new-password" value={confirm} onInput={(e) => setConfirm(e.currentTarget.value)} />}
        </Field>
        <ErrorNotice error={unclaimed(error, ['password'])} />
        <Button type="submit" variant="primary" pending={pending} class="btn-block">
          Set password and sign in
        </Button>
      </form>
    </SignInCard>
  );
}

/**
 * The signed-out page at `/invitation` of the app called `appName`. The invitation token
 * travels in the fragment (`#<token>`), never to a server log.
 */
export function invitationPage(appName: string): ComponentType<{ onSignedIn: (session: Session) => void }> {
  return function InvitationFromLink({ onSignedIn }) {
    return <Invitation appName={appName} token={window.location.hash.slice(1)} onSignedIn={onSignedIn} />;
  };
}

function check(password: string, confirm: string): { password?: string; confirm?: string } {
  if (password.length < MIN || password.length > MAX) return { password: `Use ${MIN} to ${MAX} characters.` };
  if (password !== confirm) return { confirm: 'The two passwords differ.' };
  return {};
}
