import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { useMutation } from '../lib/hooks';
import { oneTimeCode } from '../lib/session';
import { Button } from '../ui/Button';
import { CopyButton } from '../ui/CopyButton';
import { Field, unclaimed } from '../ui/Field';
import { ErrorNotice, Notice } from '../ui/Notice';
import { ConfirmSecondFactor, DisableSecondFactor } from '../people/operations';
import { groupInFours, isAppCode, recoveryCodesFileName, recoveryCodesText } from './secondFactor';

/**
 * Setting up: the QR code of the new secret (drawn by the server) to scan with an
 * authenticator app, the secret to type instead, its otpauth:// link for a phone, and a
 * code to confirm. Its steps are <h3> under a section's <h2>, or `headingLevel` 2 on a
 * screen whose <h1> is the setup itself.
 */
export function SetUpSecondFactor({
  secret,
  uri,
  qrCodeSvg,
  headingLevel = 3,
  onConfirmed,
  onCancel,
}: {
  secret: string;
  uri: string;
  qrCodeSvg: string;
  headingLevel?: 2 | 3;
  onConfirmed: (codes: string[]) => void;
  onCancel: () => void;
}) {
  const Heading = headingLevel === 2 ? 'h2' : 'h3';
  const [code, setCode] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const confirm = useMutation(ConfirmSecondFactor);
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  const submit = async (e: Event) => {
    e.preventDefault();
    const typed = oneTimeCode(code);
    setProblem(isAppCode(typed) ? null : 'Enter the 6-digit code your app shows for neocloud.');
    if (!isAppCode(typed)) return;
    const r = await confirm.run({ code: typed });
    if (r) onConfirmed(r.confirmSecondFactor);
    else setCode('');
  };
  return (
    <div class="setup">
      <Heading class="subhead" tabIndex={-1} ref={heading}>
        1. Add neocloud to your authenticator app
      </Heading>
      <p>Scan this code with your authenticator app:</p>
      <img class="setup-qr" src={`data:image/svg+xml;charset=utf-8,${encodeURIComponent(qrCodeSvg)}`} width={200} height={200} alt="QR code of your neocloud setup key" />
      <p>Or enter this key (the app's "enter a setup key" choice, time-based):</p>
      <div class="setup-key-row">
        <code class="setup-key">{groupInFours(secret)}</code>
        <CopyButton text={secret} what="the setup key" />
      </div>
      <p class="muted small">
        On the phone with the app? <a href={uri}>Open this key in your authenticator app</a>.
      </p>
      <Heading class="subhead">2. Enter the code it shows</Heading>
      <form onSubmit={submit} noValidate aria-label="Confirm the second factor">
        <Field label="Code from the app" name="code" error={confirm.error} message={problem} hint="Six digits; it changes every 30 seconds.">
          {(p) => <input {...p} type="text" inputMode="numeric" autocomplete="one-time-code" spellcheck={false} maxLength={12} value={code} onInput={(e) => setCode(e.currentTarget.value)} />}
        </Field>
        <ErrorNotice error={unclaimed(confirm.error, ['code'])} />
        <div class="form-actions-inline">
          <Button type="submit" variant="primary" pending={confirm.pending}>
            Turn on
          </Button>
          <Button variant="ghost" disabled={confirm.pending} onClick={onCancel}>
            Cancel
          </Button>
        </div>
      </form>
    </div>
  );
}

/**
 * The ten recovery codes, once: copy, download as .txt, and a clear "store these now".
 * `resetBy`: who else can turn the second factor off (a tenant's admin; a provider's users).
 */
export function RecoveryCodes({ email, codes, resetBy = 'an admin', onDone }: { email: string; codes: string[]; resetBy?: string; onDone: () => void }) {
  const box = useRef<HTMLElement>(null);
  const text = useMemo(() => recoveryCodesText(email, codes, new Date()), [email, codes]);
  const url = useMemo(() => URL.createObjectURL(new Blob([text], { type: 'text/plain;charset=utf-8' })), [text]);
  useEffect(() => () => URL.revokeObjectURL(url), [url]);
  // The form that asked for them is gone: the focus goes to the codes' box.
  useEffect(() => box.current?.focus(), []);
  return (
    <section class="card form-card secret" ref={box} tabIndex={-1} aria-labelledby="recovery-title">
      <Notice tone="warning" title="Store these recovery codes now">
        <p>
          Each code signs you in once in place of a code from your app, if your phone is lost. They are shown only this once: keep them in a password manager or print them. Without your phone or a
          code, only {resetBy} can turn the second factor off.
        </p>
      </Notice>
      <p class="card-title" id="recovery-title">
        Recovery codes
      </p>
      <ol class="recovery-codes" aria-label="Recovery codes">
        {codes.map((c) => (
          <li key={c}>
            <code>{c}</code>
          </li>
        ))}
      </ol>
      <div class="inline-actions">
        <CopyButton text={codes.join('\n')} label="Copy all" what="recovery codes" />
        <a class="btn btn-secondary" href={url} download={recoveryCodesFileName(email)}>
          Download as .txt
        </a>
      </div>
      <Button variant="primary" class="done" onClick={onDone}>
        I have stored them
      </Button>
    </section>
  );
}

/** Turning it off needs a current code or a recovery code. */
export function DisableSecondFactorForm({ onDisabled, onCancel }: { onDisabled: () => void; onCancel: () => void }) {
  const [code, setCode] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const disable = useMutation(DisableSecondFactor);
  useEffect(() => document.getElementById('disable-code')?.focus(), []);
  const submit = async (e: Event) => {
    e.preventDefault();
    const typed = oneTimeCode(code);
    setProblem(typed ? null : 'Enter a code from your app or a recovery code.');
    if (!typed) return;
    if (await disable.run({ code: typed })) onDisabled();
    else setCode('');
  };
  return (
    <form class="setup" onSubmit={submit} noValidate aria-label="Turn off the second factor">
      <Field label="Code from the app or a recovery code" name="code" id="disable-code" error={disable.error} message={problem} hint="Signing in then needs your password only.">
        {(p) => <input {...p} type="text" autocomplete="one-time-code" autocapitalize="off" spellcheck={false} maxLength={40} value={code} onInput={(e) => setCode(e.currentTarget.value)} />}
      </Field>
      <ErrorNotice error={unclaimed(disable.error, ['code'])} />
      <div class="form-actions-inline">
        <Button type="submit" variant="danger" pending={disable.pending}>
          Turn off
        </Button>
        <Button variant="ghost" disabled={disable.pending} onClick={onCancel}>
          Cancel
        </Button>
      </div>
    </form>
  );
}
