import { useState } from 'preact/hooks';
import type { Role } from '../../gql/schema';
import { dateTime } from '../../lib/format';
import { useQuery } from '../../lib/hooks';
import { type Invited, InvitationLink, type IssuedLink } from '../../people/InvitationLink';
import { InviteForm } from '../../people/InviteForm';
import { type RequireSecondFactorTexts, RequireSecondFactorSwitch } from '../../people/RequireSecondFactorSwitch';
import { UserActions } from '../../people/UserActions';
import { UserState } from '../../people/UserState';
import { type PortalUserRowFragment, PortalUsers } from '../../people/operations';
import { Badge } from '../../ui/Badge';
import { type Column, DataTable } from '../../ui/DataTable';
import { Link } from '../../ui/Link';
import { ErrorNotice, Loading } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { canChange, isTenantAdmin, roleLabel, useViewer, type Viewer } from '../../ui/viewer';
import { AccountNav } from '../AccountNav';
import { RequireSecondFactor } from '../operations';
import { RoleChoice } from '../RoleChoice';
import { mayManage, userRoles } from '../roles';

type User = PortalUserRowFragment;

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
          <RequireSecondFactorSetting required={secondFactorRequired} users={data.portalUsers} onChanged={setRequired} />
        </Section>
      )}
      {mayInvite && !link && (
        <Section title="Invite someone">
          <Invite roles={userRoles(viewer.role)} onInvited={invited} />
        </Section>
      )}
    </Page>
  );
}

function columns(viewer: Viewer, secondFactorRequired: boolean, reload: () => void, invited: Invited): Column<User>[] {
  const cols: Column<User>[] = [
    { header: 'Email', cell: (u) => u.email },
    { header: 'Role', cell: (u) => roleLabel(u.role) },
    { header: 'State', cell: (u) => <UserState user={u} secondFactorRequired={secondFactorRequired} /> },
    { header: 'Last sign-in', cell: (u) => (u.lastSignInAt ? dateTime(u.lastSignInAt) : 'Never') },
    { header: 'Added', cell: (u) => dateTime(u.createdAt) },
  ];
  if (canChange(viewer)) cols.push({ header: 'Actions', hiddenHeader: true, cell: (u) => manageable(viewer, u) && <UserActions user={u} onChanged={reload} onInvited={invited} /> });
  return cols;
}

function manageable(viewer: Viewer, u: User): boolean {
  return u.state !== 'REMOVED' && mayManage(viewer.role, u.role);
}

/**
 * Whether every portal user must have a second factor: the switch for tenant admins (on
 * takes their own second factor first), the state for everyone else; and who still
 * has none.
 */
function RequireSecondFactorSetting({ required, users, onChanged }: { required: boolean; users: readonly User[]; onChanged: (required: boolean) => void }) {
  const viewer = useViewer();
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
    <RequireSecondFactorSwitch
      required={required}
      users={users}
      mutation={RequireSecondFactor}
      answer={(r) => r.requireSecondFactor.secondFactorRequired}
      onChanged={onChanged}
      texts={SWITCH_TEXTS}
    />
  );
}

const SWITCH_TEXTS: RequireSecondFactorTexts = {
  label: 'Require a second factor of every member',
  nowRequired: 'A second factor is now required of every member.',
  marked: 'marked "No 2FA yet" above',
  app: 'the portal',
  securityPath: '/account/security',
};

/** Invites a person with one of the roles the viewer may grant (a member by default). */
function Invite({ roles, onInvited }: { roles: readonly Role[]; onInvited: Invited }) {
  return (
    <InviteForm
      role={roles.includes('TENANT_MEMBER') ? 'TENANT_MEMBER' : (roles[0] ?? 'TENANT_MEMBER')}
      chooseRole={(p) => <RoleChoice legend="Role" roles={roles} {...p} />}
      onInvited={(email, url, emailed) => onInvited({ email, url, kind: 'invitation', emailed })}
    />
  );
}
