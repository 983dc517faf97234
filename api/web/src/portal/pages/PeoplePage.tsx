import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { dateTime } from '../../lib/format';
import { useMutation, useQuery } from '../../lib/hooks';
import { Badge, StatusBadge } from '../../ui/Badge';
import { Button } from '../../ui/Button';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { type Column, DataTable } from '../../ui/DataTable';
import { Link } from '../../ui/Link';
import { ErrorNotice, Loading, Notice } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { SecretOnce } from '../../ui/SecretOnce';
import { canChange, isTenantAdmin, roleLabel, useViewer, type Viewer } from '../../ui/viewer';
import { AccountNav } from '../AccountNav';
import { InviteForm, invitationUrl } from '../InviteForm';
import { InviteUser, type PortalUserRowFragment, PortalUsers, RemoveUser, RequireSecondFactor, ResetPassword, ResetSecondFactor } from '../operations';
import { mayManage, userRoles } from '../roles';
import { findSelf, withoutSecondFactor } from '../secondFactor';

type User = PortalUserRowFragment;

/** What a one-time link lets its person do. */
type LinkKind = 'invitation' | 'reset';

/**
 * The people who sign in to the portal with an email and a password: invite, a new
 * password (reset link), reset a lost second factor, remove; and whether every one of
 * them must have a second factor (admins set it).
 */
export function PeoplePage() {
  const viewer = useViewer();
  const { data, error, loading, reload } = useQuery(PortalUsers, {});
  const [link, setLink] = useState<IssuedLink | null>(null);
  // What requireSecondFactor last answered (the query's answer until then).
  const [required, setRequired] = useState<boolean | null>(null);
  const secondFactorRequired = required ?? data?.viewer.tenant?.secondFactorRequired ?? false;
  const invited: Invited = (issued) => {
    setLink(issued);
    reload();
  };
  const mayInvite = canChange(viewer) && userRoles(viewer.role).length > 0;
  return (
    <Page title="People" lead="Colleagues who sign in to this portal with their email and a password.">
      <AccountNav />
      {link && <InvitationLink {...link} onDone={() => setLink(null)} />}
      <ErrorNotice error={error} onRetry={reload} />
      {!data && loading && <Loading label="Loading people…" />}
      {data && (
        <Section title="Portal users">
          <DataTable
            virtual
            caption="People invited to the portal"
            hideCaption
            columns={columns(viewer, secondFactorRequired, reload, invited)}
            rows={data.portalUsers}
            rowKey={(u) => u.id}
            loading={loading}
            empty="Nobody has been invited yet."
          />
        </Section>
      )}
      {data?.viewer.tenant && (
        <Section title="Second factor">
          <RequireSecondFactorSwitch required={secondFactorRequired} users={data.portalUsers} onChanged={setRequired} />
        </Section>
      )}
      {mayInvite && !link && (
        <Section title="Invite someone">
          <InviteForm roles={userRoles(viewer.role)} onInvited={(email, url, emailed) => invited({ email, url, kind: 'invitation', emailed })} />
        </Section>
      )}
    </Page>
  );
}

function InvitationLink({ email, url, kind, emailed, onDone }: IssuedLink & { onDone: () => void }) {
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

/** A one-time link just issued, shown once; `emailed` when the person was mailed it too. */
interface IssuedLink {
  email: string;
  url: string;
  kind: LinkKind;
  emailed: boolean;
}

type Invited = (issued: IssuedLink) => void;

function columns(viewer: Viewer, secondFactorRequired: boolean, reload: () => void, invited: Invited): Column<User>[] {
  const cols: Column<User>[] = [
    { header: 'Email', cell: (u) => u.email },
    { header: 'Role', cell: (u) => roleLabel(u.role) },
    { header: 'State', cell: (u) => <UserState user={u} secondFactorRequired={secondFactorRequired} /> },
    { header: 'Last sign-in', cell: (u) => (u.lastSignInAt ? dateTime(u.lastSignInAt) : 'Never') },
    { header: 'Added', cell: (u) => dateTime(u.createdAt) },
  ];
  if (canChange(viewer)) cols.push({ header: 'Actions', hiddenHeader: true, cell: (u) => manageable(viewer, u) && <UserActions user={u} onRemoved={reload} onInvited={invited} /> });
  return cols;
}

function manageable(viewer: Viewer, u: User): boolean {
  return u.state !== 'REMOVED' && mayManage(viewer.role, u.role);
}

function UserState({ user, secondFactorRequired }: { user: User; secondFactorRequired: boolean }) {
  const locked = user.lockedUntil && Date.parse(user.lockedUntil) > Date.now();
  return (
    <div class="cell-stack">
      <StatusBadge value={user.state} />
      {user.state === 'INVITED' && <span class="muted">{`invitation valid until ${dateTime(user.invitationExpiresAt)}`}</span>}
      {locked && <Badge tone="warn">{`Locked until ${dateTime(user.lockedUntil)}`}</Badge>}
      {user.secondFactorSince && (
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

/**
 * Whether every portal user must have a second factor: a switch for tenant admins (on
 * takes their own second factor first), the state for everyone else; and who still
 * has none.
 */
function RequireSecondFactorSwitch({ required, users, onChanged }: { required: boolean; users: readonly User[]; onChanged: (required: boolean) => void }) {
  const viewer = useViewer();
  const id = useId();
  const change = useMutation(RequireSecondFactor);
  const [asked, setAsked] = useState<boolean | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const missing = withoutSecondFactor(users).length;
  const box = useRef<HTMLInputElement>(null);
  const me = findSelf(users, viewer.email);
  // An admin signed in with a password turns it on only with its own second factor on.
  const mine = !required && !!me && !me.secondFactorSince;
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
    onChanged(r.requireSecondFactor.secondFactorRequired);
    setSaved(r.requireSecondFactor.secondFactorRequired ? 'A second factor is now required of every member.' : 'A second factor is no longer required.');
  };
  const people = missing === 1 ? '1 person has' : `${missing} people have`;
  const who =
    missing === 0
      ? 'Everyone here has a second factor.'
      : required
        ? `${people} no second factor yet (marked "No 2FA yet" above): they must set one up before they can use the portal.`
        : `${people} no second factor yet.`;
  if (!isTenantAdmin(viewer)) {
    return (
      <div class="card form-card">
        <p class="status-line">
          {required ? <Badge tone="good">Required</Badge> : <Badge tone="neutral">Not required</Badge>}
          <span>{required ? 'Your organisation requires a second factor of every member.' : 'Your organisation does not require a second factor.'}</span>
        </p>
        <p class="muted">An admin decides this. Your own second factor is on the <Link to="/account/security">Security</Link> page.</p>
      </div>
    );
  }
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
        Require a second factor of every member
      </label>
      <p class="field-hint" id={`${id}-hint`}>
        While it is on, someone without a second factor can sign in only to set one up, sessions already open included, and nobody can turn theirs off. {who}
        {mine && ' You need your own second factor on before you can turn this on: set it up on the '}
        {mine && <Link to="/account/security">Security</Link>}
        {mine && ' page.'}
      </p>
      {change.pending && <Loading label={asked ? 'Turning the requirement on…' : 'Turning the requirement off…'} />}
      {saved && <Notice tone="success">{saved}</Notice>}
      <ErrorNotice error={change.error} />
    </div>
  );
}

function UserActions({ user, onRemoved, onInvited }: { user: User; onRemoved: () => void; onInvited: Invited }) {
  const remove = useMutation(RemoveUser);
  const run = async () => {
    const ok = (await remove.run({ id: user.id })) !== null;
    if (ok) onRemoved();
    return ok;
  };
  return (
    <div class="inline-actions">
      {user.state === 'INVITED' && <Reinvite user={user} onInvited={onInvited} />}
      {user.state === 'ACTIVE' && <NewPassword user={user} onInvited={onInvited} />}
      {user.state === 'ACTIVE' && user.secondFactorSince && <ResetTwoFactor user={user} onReset={onRemoved} />}
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
