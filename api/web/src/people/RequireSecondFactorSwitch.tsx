import { useEffect, useId, useRef, useState } from 'preact/hooks';
import type { Doc } from '../lib/doc';
import { useMutation } from '../lib/hooks';
import { Link } from '../ui/Link';
import { ErrorNotice, Loading, Notice } from '../ui/Notice';
import { useViewer } from '../ui/viewer';
import { findSelf, missingSecondFactorText, ownSecondFactorFirst, withoutSecondFactor } from './secondFactor';

/** What the switch says, in the app's words. */
export interface RequireSecondFactorTexts {
  /** The switch's label: "Require a second factor of every member". */
  label: string;
  /** Once turned on: "A second factor is now required of every member." */
  nowRequired: string;
  /** Where the list above marks those without one: 'marked "No 2FA yet" above'. */
  marked: string;
  /** The app they cannot use until they set one up: "the portal". */
  app: string;
  /** The app's Security page (where the signed-in person sets up their own). */
  securityPath: string;
}

interface RequireSecondFactorSwitchProps<R> {
  /** Whether a second factor is required now. */
  required: boolean;
  /** The tenant's or the provider's users (the signed-in person among them, if a person). */
  users: readonly { email: string; state: string; secondFactorSince: string | null }[];
  /** The mutation that sets it: `requireSecondFactor` (a tenant) or `requireProviderSecondFactor`. */
  mutation: Doc<R, { required: boolean }>;
  /** Whether the mutation's answer says a second factor is required. */
  answer: (result: R) => boolean;
  onChanged: (required: boolean) => void;
  texts: RequireSecondFactorTexts;
}

/**
 * Whether every user of a tenant (the portal's people page, for its admins) or a provider
 * (the provider console's) must have a second factor: a switch (a person signed in with a
 * password turns it on only with their own second factor on), and who still has none.
 */
export function RequireSecondFactorSwitch<R>({ required, users, mutation, answer, onChanged, texts }: RequireSecondFactorSwitchProps<R>) {
  const viewer = useViewer();
  const id = useId();
  const change = useMutation(mutation);
  const [asked, setAsked] = useState<boolean | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const missing = withoutSecondFactor(users).length;
  const box = useRef<HTMLInputElement>(null);
  // Signed in with a password, one turns it on only with one's own second factor on.
  const mine = ownSecondFactorFirst(required, findSelf(users, viewer.email));
  // Disabled while the change runs, the switch loses the keyboard focus: it gets it back.
  const refocus = useRef(false);
  useEffect(() => {
    if (change.pending || !refocus.current) return;
    refocus.current = false;
    if (!document.activeElement || document.activeElement === document.body) box.current?.focus();
  }, [change.pending]);
  const toggle = async (next: boolean) => {
    refocus.current = document.activeElement === box.current;
    setAsked(next);
    setSaved(null);
    const r = await change.run({ required: next });
    setAsked(null);
    if (!r) return;
    const now = answer(r);
    onChanged(now);
    setSaved(now ? texts.nowRequired : 'A second factor is no longer required.');
  };
  return (
    <div class="card form-card">
      <label class="check">
        <input
          type="checkbox"
          ref={box}
          id={id}
          checked={asked ?? required}
          disabled={change.pending}
          aria-describedby={`${id}-hint`}
          onChange={(e) => void toggle(e.currentTarget.checked)}
        />
        {texts.label}
      </label>
      <p class="field-hint" id={`${id}-hint`}>
        While it is on, someone without a second factor can sign in only to set one up, sessions already open included, and nobody can turn theirs off.{' '}
        {missingSecondFactorText(missing, required, texts.marked, texts.app)}
        {mine && ' You need your own second factor on before you can turn this on: set it up on the '}
        {mine && <Link to={texts.securityPath}>Security</Link>}
        {mine && ' page.'}
      </p>
      {change.pending && <Loading label={asked ? 'Turning the requirement on…' : 'Turning the requirement off…'} />}
      {saved && <Notice tone="success">{saved}</Notice>}
      <ErrorNotice error={change.error} />
    </div>
  );
}
