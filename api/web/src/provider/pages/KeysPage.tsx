import { dateTime } from '../../lib/format';
import { useMutation, useQuery } from '../../lib/hooks';
import { Badge } from '../../ui/Badge';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { type Column, DataTable } from '../../ui/DataTable';
import { ErrorNotice, Loading } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { useViewer } from '../../ui/viewer';
import { NewKey } from '../NewKey';
import { OwnKeys, type OwnKeyRowFragment, RevokeOwnKey } from '../operations';

type Key = OwnKeyRowFragment;

/** The provider's API keys: when each was used; create one, revoke one. */
export function KeysPage() {
  const { apiKeyId } = useViewer();
  const { data, error, loading, reload } = useQuery(OwnKeys, {});
  // Keys in use first, revoked ones after.
  const keys = [...(data?.apiKeys ?? [])].sort((a, b) => Number(!!a.revokedAt) - Number(!!b.revokedAt));
  return (
    <Page title="API keys" lead="Your provider's keys: for this console, your scripts and registering nodes. Revoking a key stops it at once.">
      <ErrorNotice error={error} onRetry={reload} />
      {!data && loading && <Loading label="Loading keys…" />}
      {data && (
        <>
          <Section title="Keys">
            <DataTable virtual caption={`API keys of ${data.provider.name}`} hideCaption columns={columns(apiKeyId, reload)} rows={keys} rowKey={(k) => k.id} loading={loading} empty="No keys." />
          </Section>
          <Section title="Create a key">
            <NewKey providerId={data.provider.id} onCreated={reload} />
          </Section>
        </>
      )}
    </Page>
  );
}

function columns(sessionKey: string, reload: () => void): Column<Key>[] {
  return [
    { header: 'Label', cell: (k) => <KeyLabel apiKey={k} current={k.id === sessionKey} /> },
    { header: 'Prefix', cell: (k) => <code>{`nck_${k.prefix}_…`}</code> },
    { header: 'Created', cell: (k) => dateTime(k.createdAt) },
    { header: 'Last used', cell: (k) => (k.lastUsedAt ? dateTime(k.lastUsedAt) : 'Never') },
    { header: 'Status', cell: (k) => (k.revokedAt ? `Revoked ${dateTime(k.revokedAt)}` : <Badge tone="good">Active</Badge>) },
    // The session's own key stays: revoking it would end this session.
    { header: 'Actions', hiddenHeader: true, cell: (k) => !k.revokedAt && k.id !== sessionKey && <Revoke apiKey={k} onRevoked={reload} /> },
  ];
}

function KeyLabel({ apiKey, current }: { apiKey: Key; current: boolean }) {
  return (
    <span class="cell-stack">
      <span>{apiKey.label || <span class="muted">No label</span>}</span>
      {current && <Badge tone="info">This session's key</Badge>}
    </span>
  );
}

function Revoke({ apiKey, onRevoked }: { apiKey: Key; onRevoked: () => void }) {
  const revoke = useMutation(RevokeOwnKey);
  // Done: the question closes; refused: it stays, with the reason.
  const onConfirm = async () => {
    if (!(await revoke.run({ id: apiKey.id }))) return false;
    onRevoked();
    return true;
  };
  return <ConfirmButton label="Revoke" confirmLabel="Confirm revoke" what={`key ${apiKey.label || `nck_${apiKey.prefix}`}`} pending={revoke.pending} error={revoke.error} onConfirm={onConfirm} />;
}
