import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { Role } from '../gql/schema';
import type { ApiError } from '../lib/api';
import { useMutation } from '../lib/hooks';
import { InviteUser } from '../people/operations';
import { Button } from '../ui/Button';
import { Field, unclaimed } from '../ui/Field';
import { ErrorNotice } from '../ui/Notice';

/** The invitation as an absolute link (the API answers the path only). */
export function invitationUrl(path: string): string {
  return `${window.location.origin}${path}`;
}

/** The control that picks the role of the person invited (the portal's role choice). */
export type ChooseRole = (props: { value: Role; onChange: (role: Role) => void; error: ApiError | null }) => ComponentChildren;

interface InviteFormProps {
  /** The role invited with: preselected in `chooseRole`, else the only one (a provider's). */
  role: Role;
  chooseRole?: ChooseRole;
  onInvited: (email: string, url: string, emailed: boolean) => void;
}

/** Invites a person by email with a role; the parent shows the link once (and whether it was mailed). */
export function InviteForm({ role: initial, chooseRole, onInvited }: InviteFormProps) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>(initial);
  const [problem, setProblem] = useState<string | null>(null);
  const invite = useMutation(InviteUser);
  const submit = async (e: Event) => {
    e.preventDefault();
    const address = email.trim();
    setProblem(/^[^\s@]+@[^\s@]+$/.test(address) ? null : 'Enter an email address such as ada@example.com.');
    if (!/^[^\s@]+@[^\s@]+$/.test(address)) return;
    const r = await invite.run({ email: address, role });
    if (!r) return;
    setEmail('');
    onInvited(address, invitationUrl(r.inviteUser.invitationPath), r.inviteUser.emailed);
  };
  return (
    <form class="card form-card" onSubmit={submit} noValidate aria-label="Invite someone">
      <Field label="Email" name="email" error={invite.error} message={problem} hint="Next you see their link, and whether it was mailed to them.">
        {(p) => <input {...p} type="email" autocomplete="off" value={email} onInput={(e) => setEmail(e.currentTarget.value)} />}
      </Field>
      {chooseRole?.({ value: role, onChange: setRole, error: invite.error })}
      <ErrorNotice error={unclaimed(invite.error, chooseRole ? ['email', 'role'] : ['email'])} />
      <Button type="submit" variant="primary" pending={invite.pending}>
        Invite
      </Button>
    </form>
  );
}
