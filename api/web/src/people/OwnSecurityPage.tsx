import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { dateTime } from '../lib/format';
import { useMutation, useQuery } from '../lib/hooks';
import { MySecondFactor, type MySecondFactorResult, StartSecondFactor } from '../people/operations';
import { Badge } from '../ui/Badge';
import { Button } from '../ui/Button';
import { Link } from '../ui/Link';
import { ErrorNotice, Loading, Notice } from '../ui/Notice';
import { Page, Section } from '../ui/Page';
import { useViewer } from '../ui/viewer';
import { DisableSecondFactorForm, RecoveryCodes, SetUpSecondFactor } from './SecondFactorForms';
import { findSelf } from './secondFactor';

type Me = MySecondFactorResult['portalUsers'][number];

type Step = { kind: 'idle' } | { kind: 'setup'; secret: string; uri: string; qrCodeSvg: string } | { kind: 'codes'; codes: string[] } | { kind: 'disable' };

interface OwnSecurityPageProps {
  /** Under the title: how one signs in to this app. */
  lead: string;
  /** Above the page's sections (the portal's account tabs). */
  nav?: ComponentChildren;
  /** The app's API keys page, for someone signed in with a key. */
  keysPath: string;
  /** Under "Password": who gives a new one to someone who forgot it. */
  forgotten: string;
  /** Who else can turn a second factor off (in the recovery codes' warning). */
  resetBy?: string;
  /**
   * Whether the provider requires a second factor of everyone (the provider console's own
   * query); the portal leaves it out: the tenant's answer is read with the person.
   */
  required?: boolean;
  /** Why the second factor stays on while required (default: the tenant's words). */
  requiredNote?: string;
}

/**
 * Security (the portal's Account → Security, the provider console's Security): the
 * signed-in person's second factor (an authenticator app), set up, recovery codes shown
 * once, turned off with a code. Every role may use it for itself; a plain API key has no
 * second factor.
 */
export function OwnSecurityPage({ lead, nav, keysPath, forgotten, resetBy, required, requiredNote = TENANT_REQUIRES }: OwnSecurityPageProps) {
  const viewer = useViewer();
  const { data, error, loading, reload } = useQuery(MySecondFactor, {}, { skip: !viewer.email });
  const me = data ? findSelf(data.portalUsers, viewer.email) : null;
  return (
    <Page title="Security" lead={lead}>
      {nav}
      {!viewer.email && <KeyOnly keysPath={keysPath} />}
      <ErrorNotice error={error} onRetry={reload} />
      {viewer.email && !data && loading && <Loading label="Loading your account…" />}
      {data && !me && <KeyOnly keysPath={keysPath} />}
      {me && (
        <SecondFactorSection me={me} required={required ?? data?.viewer.tenant?.secondFactorRequired ?? false} requiredNote={requiredNote} resetBy={resetBy} reload={reload} />
      )}
      {me && (
        <Section title="Password">
          <p class="muted">{forgotten}</p>
        </Section>
      )}
    </Page>
  );
}

function KeyOnly({ keysPath }: { keysPath: string }) {
  return (
    <Notice tone="info" title="The second factor is for people who sign in with a password">
      <p>
        You are signed in with an API key, which is a secret of its own: keep keys in a secret manager and revoke the ones no longer used on the <Link to={keysPath}>API keys</Link> page.
      </p>
    </Notice>
  );
}

const TENANT_REQUIRES =
  'Your organisation requires a second factor of every member, so it stays on. Lost your phone? Sign in with a recovery code, or ask an admin to reset it (People → Reset second factor).';

interface SecondFactorSectionProps {
  me: Me;
  required: boolean;
  requiredNote: string;
  resetBy: string | undefined;
  reload: () => void;
}

function SecondFactorSection({ me, required, requiredNote, resetBy, reload }: SecondFactorSectionProps) {
  const [step, setStep] = useState<Step>({ kind: 'idle' });
  const [note, setNote] = useState<string | null>(null);
  const start = useMutation(StartSecondFactor);
  const on = me.secondFactorSince !== null;
  const begin = async () => {
    setNote(null);
    const r = await start.run({});
    if (r) setStep({ kind: 'setup', ...r.startSecondFactor });
  };
  const finish = (message: string) => {
    setStep({ kind: 'idle' });
    setNote(message);
    reload();
  };
  return (
    <Section title="Second factor">
      {note && <Notice tone="success">{note}</Notice>}
      {step.kind === 'codes' ? (
        <RecoveryCodes email={me.email} codes={step.codes} resetBy={resetBy} onDone={() => finish('The second factor is on: signing in now asks for a code from your app.')} />
      ) : (
        <div class="card form-card">
          <p class="card-title">Authenticator app</p>
          <p class="status-line">
            {on ? <Badge tone="good">On</Badge> : <Badge tone="neutral">Off</Badge>}
            <span>{on ? `since ${dateTime(me.secondFactorSince)}` : 'Signing in needs your password only.'}</span>
          </p>
          <p class="muted">
            With a second factor, signing in also needs a code from an app on your phone (any authenticator app: Google Authenticator, Microsoft Authenticator, 1Password, Aegis…), so a stolen
            password alone is not enough.
          </p>
          {step.kind === 'idle' && !on && (
            <Button variant="primary" pending={start.pending} onClick={begin}>
              Set up
            </Button>
          )}
          {step.kind === 'idle' && on && !required && <Button onClick={() => (setNote(null), setStep({ kind: 'disable' }))}>Turn off</Button>}
          {on && required && (
            <Notice tone="info">
              <p>{requiredNote}</p>
            </Notice>
          )}
          <ErrorNotice error={start.error} />
          {step.kind === 'setup' && (
            <SetUpSecondFactor secret={step.secret} uri={step.uri} qrCodeSvg={step.qrCodeSvg} onConfirmed={(codes) => setStep({ kind: 'codes', codes })} onCancel={() => setStep({ kind: 'idle' })} />
          )}
          {step.kind === 'disable' && (
            <DisableSecondFactorForm onDisabled={() => finish('The second factor is off: signing in needs your password only.')} onCancel={() => setStep({ kind: 'idle' })} />
          )}
        </div>
      )}
    </Section>
  );
}
