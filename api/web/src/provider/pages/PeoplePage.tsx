import { useState } from 'preact/hooks';
import { dateTime } from '../../lib/format';
import { useQuery } from '../../lib/hooks';
import { type Invited, InvitationLink, type IssuedLink } from '../../people/InvitationLink';
import { InviteForm } from '../../people/InviteForm';
import { RequireSecondFactorSwitch } from '../../people/RequireSecondFactorSwitch';
import { UserActions } from '../../people/UserActions';
import { UserState } from '../../people/UserState';
import { type PortalUserRowFragment, PortalUsers } from '../../people/operations';
import { Badge } from '../../ui/Badge';
import { type Column, DataTable } from '../../ui/DataTable';
import { Link } from '../../ui/Link';
import { ErrorNotice, Loading } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { OwnSecondFactorRequirement, RequireOwnSecondFactor } from '../operations';

type User = PortalUserRowFragment;

/**
 * The people who sign in to the provider console with an email and a password: each sees
 * and does what the provider's keys do, so anyone of them (or a key) invites, gives a
 * password-reset link, resets a lost second factor, removes, and decides whether every
 * one of them must have a second factor.
 */
export function PeoplePage() {
  const { data, error, loading, reload } = useQuery(PortalUsers, {});
  const requirement = useQuery(OwnSecondFactorRequirement, {});
  const [link, setLink] = useState<IssuedLink | null>(null);
  // What requireProviderSecondFactor last answered (the query's answer until then).
  const [required, setRequired] = useState<boolean | null>(null);
  const provider = requirement.data?.provider;
  const secondFactorRequired = required ?? provider?.secondFactorRequired ?? false;
  const invited: Invited = (issued) => {
    setLink(issued);
    reload();
  };
  return (
    <Page title="People" lead="Colleagues who sign in to this console with their email and a password. Each sees and does what your provider's API keys do.">
      {link && <InvitationLink {...link} onDone={() => setLink(null)} />}
      <ErrorNotice error={error} onRetry={reload} />
      {!data && loading && <Loading label="Loading people…" />}
      {data && (
        <Section title="Provider users">
          <DataTable
            virtual
            caption="People invited to the provider console"
            hideCaption
            columns={columns(secondFactorRequired, reload, invited)}
            rows={data.portalUsers}
            rowKey={(u) => u.id}
            loading={loading}
            empty="Nobody has been invited yet."
          />
          <p class="muted small">
            Your own second factor is on the <Link to="/security">Security</Link> page.
          </p>
        </Section>
      )}
      <ErrorNotice error={requirement.error} onRetry={requirement.reload} />
      {data && provider && (
        <Section title="Second factor">
          <RequireSecondFactorSwitch
            required={secondFactorRequired}
            users={data.portalUsers}
            mutation={RequireOwnSecondFactor}
            answer={(r) => r.requireProviderSecondFactor.secondFactorRequired}
            onChanged={setRequired}
            texts={{
              label: `Require a second factor of everyone at ${provider.name}`,
              nowRequired: `A second factor is now required of everyone at ${provider.name}.`,
              marked: 'marked "Off" above',
              app: 'the console',
              securityPath: '/security',
            }}
          />
        </Section>
      )}
      {!link && (
        <Section title="Invite someone">
          <InviteForm role="PROVIDER" onInvited={(email, url, emailed) => invited({ email, url, kind: 'invitation', emailed })} />
        </Section>
      )}
    </Page>
  );
}

function columns(secondFactorRequired: boolean, reload: () => void, invited: Invited): Column<User>[] {
  return [
    { header: 'Email', cell: (u) => u.email },
    { header: 'State', cell: (u) => <UserState user={u} secondFactorRequired={false} secondFactorBadge={false} /> },
    { header: 'Second factor', cell: (u) => <SecondFactor since={u.secondFactorSince} mustSetUp={secondFactorRequired && u.state !== 'REMOVED'} /> },
    { header: 'Last sign-in', cell: (u) => (u.lastSignInAt ? dateTime(u.lastSignInAt) : 'Never') },
    { header: 'Actions', hiddenHeader: true, cell: (u) => u.state !== 'REMOVED' && <UserActions user={u} onChanged={reload} onInvited={invited} /> },
  ];
}

/** On since when, or off (marked while one is required: they must set one up first). */
function SecondFactor({ since, mustSetUp }: { since: string | null; mustSetUp: boolean }) {
  if (!since && mustSetUp) {
    return (
      <span class="cell-stack">
        <Badge tone="warn">Off</Badge>
        <span class="muted">must set one up to use the console</span>
      </span>
    );
  }
  if (!since) return <span class="muted">Off</span>;
  return (
    <span class="cell-stack">
      <Badge tone="good">On</Badge>
      <span>{`since ${dateTime(since)}`}</span>
    </span>
  );
}
