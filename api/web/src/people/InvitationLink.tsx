import { SecretOnce } from '../ui/SecretOnce';

/** What a one-time link lets its person do. */
export type LinkKind = 'invitation' | 'reset';

/** A one-time link just issued, shown once; `emailed` when the person was mailed it too. */
export interface IssuedLink {
  email: string;
  url: string;
  kind: LinkKind;
  emailed: boolean;
}

export type Invited = (issued: IssuedLink) => void;

/** An invitation or password-reset link, shown once to be sent on. */
export function InvitationLink({ email, url, kind, emailed, onDone }: IssuedLink & { onDone: () => void }) {
  const send = emailed ? `We mailed this link to ${email}; you may also send it yourself` : `Send this link to ${email}`;
  const [label, note] =
    kind === 'reset'
      ? [`Password reset link for ${email}`, `${send}: it lets them set a new password and is valid for 24 hours. Their old password works until they use it.`]
      : [`Invitation link for ${email}`, `${send}: it lets them choose a password and is valid for 7 days.`];
  return (
    <div class="card form-card">
      <SecretOnce label={label} value={url} note={note} onDone={onDone} />
    </div>
  );
}
