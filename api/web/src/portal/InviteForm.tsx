import { useState } from 'preact/hooks';
import type { Role } from '../gql/schema';
import { useMutation } from '../lib/hooks';
import { Button } from '../ui/Button';
import { Field, unclaimed } from '../ui/Field';
import { ErrorNotice } from '../ui/Notice';
import { InviteUser } from './operations';
import { RoleChoice } from './RoleChoice';

/** The invitation as an absolute link (the API answers the path only). */
export function invitationUrl(path: string): string {
  return `${window.location.origin}${path}`;
}

/** Invites a person by email with a role; the parent shows the link once (and whether it was mailed). */
export function InviteForm({ roles, onInvited }: { roles: readonly Role[]; onInvited: (email: string, url: string, emailed: boolean) => void }) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>(roles.includes('TENANT_MEMBER') ? 'TENANT_MEMBER' : (roles[0] ?? 'TENANT_MEMBER'));
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
      <RoleChoice legend="Role" roles={roles} value={role} onChange={setRole} error={invite.error} />
      <ErrorNotice error={unclaimed(invite.error, ['email', 'role'])} />
      <Button type="submit" variant="primary" pending={invite.pending}>
        Invite
      </Button>
    </form>
  );
}
