import { dateTime } from '../../lib/format';
import { useMutation, useQuery } from '../../lib/hooks';
import { Badge } from '../../ui/Badge';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { type Column, DataTable } from '../../ui/DataTable';
import { ErrorNotice, Loading } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { canChange, roleLabel, useViewer, type Viewer } from '../../ui/viewer';
import { AccountNav } from '../AccountNav';
import { NewApiKey } from '../NewApiKey';
import { ApiKeys, type ApiKeyRowFragment, RevokeApiKey } from '../operations';
import { keyRoles, mayManage, PORTAL_USER_KEY } from '../roles';

type Key = ApiKeyRowFragment;

/** The tenant's API keys: who they are for, when they were used; create and revoke. */
export function ApiKeysPage() {
  const viewer = useViewer();
  const { data, error, loading, reload } = useQuery(ApiKeys, {});
  const keys = [...(data?.apiKeys ?? [])].sort((a, b) => Number(!!a.revokedAt) - Number(!!b.revokedAt));
  const mayCreate = canChange(viewer) && keyRoles(viewer.role).length > 0;
  return (
    <Page title="API keys" lead="Keys for scripts and services. A key acts with its role; revoking one stops it at once.">
      <AccountNav />
      <ErrorNotice error={error} onRetry={reload} />
      {!data && loading && <Loading label="Loading keys…" />}
      {data && (
        <Section title="Keys">
          <DataTable virtual caption="API keys of your organisation" hideCaption columns={columns(viewer, reload)} rows={keys} rowKey={(k) => k.id} loading={loading} empty="No keys." />
        </Section>
      )}
      {mayCreate && (
        <Section title="Create a key">
          <NewApiKey roles={keyRoles(viewer.role)} onCreated={reload} />
        </Section>
      )}
    </Page>
  );
}

function columns(viewer: Viewer, reload: () => void): Column<Key>[] {
  const cols: Column<Key>[] = [
    { header: 'Label', cell: (k) => <KeyName apiKey={k} mine={k.id === viewer.apiKeyId} /> },
    { header: 'Role', cell: (k) => roleLabel(k.role) },
    { header: 'Prefix', cell: (k) => <code>{`nck_${k.prefix}_…`}</code> },
    { header: 'Created', cell: (k) => dateTime(k.createdAt) },
    { header: 'Last used', cell: (k) => (k.lastUsedAt ? dateTime(k.lastUsedAt) : 'Never') },
    { header: 'Status', cell: (k) => <KeyStatus apiKey={k} /> },
  ];
  if (canChange(viewer)) cols.push({ header: 'Actions', hiddenHeader: true, cell: (k) => revocable(viewer, k) && <Revoke apiKey={k} onRevoked={reload} /> });
  return cols;
}

/** Not the key in use, not a portal user's (removing the person does that), not above the viewer. */
function revocable(viewer: Viewer, k: Key): boolean {
  return !k.revokedAt && k.id !== viewer.apiKeyId && !isPortalUserKey(k) && mayManage(viewer.role, k.role);
}

function isPortalUserKey(k: Key): boolean {
  return k.label.startsWith(PORTAL_USER_KEY);
}

function KeyName({ apiKey, mine }: { apiKey: Key; mine: boolean }) {
  return (
    <div class="cell-stack">
      <span>{apiKey.label || <span class="muted">No label</span>}</span>
      <span class="badges">
        {isPortalUserKey(apiKey) && <Badge tone="info">Portal user</Badge>}
        {mine && <Badge tone="neutral">In use by you</Badge>}
      </span>
    </div>
  );
}

function KeyStatus({ apiKey }: { apiKey: Key }) {
  if (!apiKey.revokedAt) return <Badge tone="good">Active</Badge>;
  return (
    <div class="cell-stack">
      <Badge tone="neutral">Revoked</Badge>
      <span class="muted">{dateTime(apiKey.revokedAt)}</span>
    </div>
  );
}

function Revoke({ apiKey, onRevoked }: { apiKey: Key; onRevoked: () => void }) {
  const revoke = useMutation(RevokeApiKey);
  const run = async () => {
    const ok = (await revoke.run({ id: apiKey.id })) !== null;
    if (ok) onRevoked();
    return ok;
  };
  return <ConfirmButton label="Revoke" confirmLabel="Confirm revoke" what={`key ${apiKey.label || apiKey.prefix}`} pending={revoke.pending} error={revoke.error} onConfirm={run} />;
}
