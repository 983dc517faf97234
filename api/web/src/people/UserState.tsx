import { dateTime } from '../lib/format';
import type { PortalUserRowFragment } from '../people/operations';
import { Badge, StatusBadge } from '../ui/Badge';

interface UserStateProps {
  user: PortalUserRowFragment;
  /** The tenant requires a second factor: those without one are marked. */
  secondFactorRequired: boolean;
  /** A "2FA" badge for a second factor that is on (off where a column of its own says it). */
  secondFactorBadge?: boolean;
}

/** A user's state: invited (until when), active or removed; locked; its second factor. */
export function UserState({ user, secondFactorRequired, secondFactorBadge = true }: UserStateProps) {
  const locked = user.lockedUntil && Date.parse(user.lockedUntil) > Date.now();
  return (
    <div class="cell-stack">
      <StatusBadge value={user.state} />
      {user.state === 'INVITED' && <span class="muted">{`invitation valid until ${dateTime(user.invitationExpiresAt)}`}</span>}
      {locked && <Badge tone="warn">{`Locked until ${dateTime(user.lockedUntil)}`}</Badge>}
      {secondFactorBadge && user.secondFactorSince && (
        <span title={`Second factor (authenticator app) on since ${dateTime(user.secondFactorSince)}`}>
          <Badge tone="good">2FA</Badge>
          <span class="sr-only">{`: second factor on since ${dateTime(user.secondFactorSince)}`}</span>
        </span>
      )}
      {secondFactorRequired && !user.secondFactorSince && user.state !== 'REMOVED' && (
        <span title="No second factor yet: they must set one up before they can use the portal">
          <Badge tone="warn">No 2FA yet</Badge>
          <span class="sr-only">: must set up a second factor before using the portal</span>
        </span>
      )}
    </div>
  );
}
