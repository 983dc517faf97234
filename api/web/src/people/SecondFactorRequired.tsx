import type { ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { useMutation } from '../lib/hooks';
import type { SecondFactorSetupProps } from '../ui/AppShell';
import { Button } from '../ui/Button';
import { ErrorNotice } from '../ui/Notice';
import { pageTitle } from '../ui/Page';
import { SignInCard } from '../ui/SignIn';
import { StartSecondFactor } from './operations';
import { RecoveryCodes, SetUpSecondFactor } from './SecondFactorForms';
import { accountOfOtpauth } from './secondFactor';

type Step = { kind: 'intro' } | { kind: 'setup'; secret: string; uri: string; qrCodeSvg: string } | { kind: 'codes'; email: string; codes: string[] };

/**
 * The app's screen (`AppConfig.secondFactorSetup`) for a session of someone who must set
 * up a second factor (their tenant or provider requires one): `reason` says who requires
 * it ("Your organisation requires a second factor for every member.").
 */
export function secondFactorRequired(reason: string): ComponentType<SecondFactorSetupProps> {
  return (props) => <SecondFactorRequired {...props} reason={reason} />;
}

/**
 * The app while the tenant (the portal) or the provider (the provider console) requires
 * a second factor the signed-in person has not set up: nothing but setting one up (every
 * other request is refused) or signing out. Once its recovery codes are stored, the app
 * opens.
 */
export function SecondFactorRequired({ appName, onDone, signingOut, onSignOut, reason }: SecondFactorSetupProps & { reason: string }) {
  const [step, setStep] = useState<Step>({ kind: 'intro' });
  const start = useMutation(StartSecondFactor);
  useEffect(() => {
    document.title = pageTitle('Set up a second factor');
  }, []);
  const begin = async () => {
    const r = await start.run({});
    if (r) setStep({ kind: 'setup', ...r.startSecondFactor });
  };
  return (
    <SignInCard appName={appName} title="Set up a second factor" wide>
      <p>{`${reason} Set one up to continue.`}</p>
      {step.kind === 'intro' && (
        <>
          <p class="muted">
            A second factor is an authenticator app on your phone (Google Authenticator, Microsoft Authenticator, 1Password, Aegis…): signing in then also needs the code it shows, so a stolen
            password alone is not enough.
          </p>
          <ErrorNotice error={start.error} />
          <Button variant="primary" pending={start.pending} onClick={begin}>
            Set up now
          </Button>
        </>
      )}
      {step.kind === 'setup' && (
        <SetUpSecondFactor
          secret={step.secret}
          uri={step.uri}
          qrCodeSvg={step.qrCodeSvg}
          headingLevel={2}
          onConfirmed={(codes) => setStep({ kind: 'codes', email: accountOfOtpauth(step.uri), codes })}
          onCancel={() => setStep({ kind: 'intro' })}
        />
      )}
      {step.kind === 'codes' && <RecoveryCodes email={step.email} codes={step.codes} onDone={onDone} />}
      {step.kind !== 'codes' && (
        <p class="divider-top muted small">
          Not now?{' '}
          <Button small variant="ghost" pending={signingOut} onClick={onSignOut}>
            Sign out
          </Button>
        </p>
      )}
    </SignInCard>
  );
}
