import { useMutation } from '../lib/hooks';
import { InviteUser, type PortalUserRowFragment, RemoveUser, ResetPassword, ResetSecondFactor } from '../people/operations';
import { Button } from '../ui/Button';
import { ConfirmButton } from '../ui/ConfirmButton';
import { ErrorNotice } from '../ui/Notice';
import type { Invited } from './InvitationLink';
import { invitationUrl } from './InviteForm';

type User = PortalUserRowFragment;

/**
 * What may be done to a user the viewer manages: a new invitation link (invited), a
 * password-reset link and a second-factor reset (active), removal. `onChanged` reloads.
 */
export function UserActions({ user, onChanged, onInvited }: { user: User; onChanged: () => void; onInvited: Invited }) {
  const remove = useMutation(RemoveUser);
  const run = async () => {
    const ok = (await remove.run({ id: user.id })) !== null;
    if (ok) onChanged();
    return ok;
  };
  return (
    <div class="inline-actions">
      {user.state === 'INVITED' && <Reinvite user={user} onInvited={onInvited} />}
      {user.state === 'ACTIVE' && <NewPassword user={user} onInvited={onInvited} />}
      {user.state === 'ACTIVE' && user.secondFactorSince && <ResetTwoFactor user={user} onReset={onChanged} />}
      <ConfirmButton label="Remove" confirmLabel="Confirm removal" what={user.email} pending={remove.pending} error={remove.error} onConfirm={run} />
    </div>
  );
}

/** A one-time link (24 hours) to set a new password; the old one works until it is used. */
function NewPassword({ user, onInvited }: { user: User; onInvited: Invited }) {
  const reset = useMutation(ResetPassword);
  const run = async () => {
    const r = await reset.run({ id: user.id });
    if (r) onInvited({ email: user.email, url: invitationUrl(r.resetPassword.invitationPath), kind: 'reset', emailed: r.resetPassword.emailed });
  };
  return (
    <>
      <Button small pending={reset.pending} onClick={run} aria-label={`Reset password of ${user.email}`}>
        Reset password
      </Button>
      <ErrorNotice error={reset.error} />
    </>
  );
}

/** Turns a user's second factor off (a lost phone); they set it up again. */
function ResetTwoFactor({ user, onReset }: { user: User; onReset: () => void }) {
  const reset = useMutation(ResetSecondFactor);
  const run = async () => {
    const ok = (await reset.run({ id: user.id })) !== null;
    if (ok) onReset();
    return ok;
  };
  return <ConfirmButton label="Reset second factor" confirmLabel="Confirm reset" what={user.email} pending={reset.pending} error={reset.error} onConfirm={run} />;
}

/** A new invitation link for someone who has not accepted yet (the old one stops working). */
function Reinvite({ user, onInvited }: { user: User; onInvited: Invited }) {
  const invite = useMutation(InviteUser);
  const run = async () => {
    const r = await invite.run({ email: user.email, role: user.role });
    if (r) onInvited({ email: user.email, url: invitationUrl(r.inviteUser.invitationPath), kind: 'invitation', emailed: r.inviteUser.emailed });
  };
  return (
    <>
      <Button small pending={invite.pending} onClick={run} aria-label={`New link for ${user.email}`}>
        New link
      </Button>
      <ErrorNotice error={invite.error} />
    </>
  );
}
