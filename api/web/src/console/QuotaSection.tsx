import { compare, divide, multiply } from '../lib/decimal';
import { dateTime, groupDigits } from '../lib/format';
import { useMutation, useQuery } from '../lib/hooks';
import { ConfirmButton } from '../ui/ConfirmButton';
import { type Column, DataTable } from '../ui/DataTable';
import { ErrorNotice, Loading } from '../ui/Notice';
import { Section } from '../ui/Page';
import { type QuotaRowFragment, SetQuota, TenantQuotas } from './operations';
import { QuotaForm, scopeLabel } from './QuotaForm';

type Quota = QuotaRowFragment;

/** A tenant's quotas with what it holds against each; set, change or remove one. */
export function QuotaSection({ tenantId }: { tenantId: string }) {
  const { data, error, loading, reload } = useQuery(TenantQuotas, { tenantId });
  return (
    <Section title="Quotas">
      <ErrorNotice error={error} onRetry={reload} />
      {!data && loading && <Loading label="Loading quotas…" />}
      {data && <DataTable caption="Quotas and their use" hideCaption columns={columns(tenantId, reload)} rows={data.quotas} rowKey={(q) => q.id} loading={loading} empty="No quotas: the tenant is limited by capacity only." />}
      <QuotaForm tenantId={tenantId} onSaved={reload} />
    </Section>
  );
}

function columns(tenantId: string, reload: () => void): Column<Quota>[] {
  return [
    { header: 'Scope', cell: (q) => scopeLabel(q.scope) },
    { header: 'Applies to', cell: (q) => (q.value ? <code>{q.value}</code> : 'All') },
    { header: 'Used', cell: (q) => <Use quota={q} /> },
    { header: 'Updated', cell: (q) => dateTime(q.updatedAt) },
    { header: 'Actions', hiddenHeader: true, cell: (q) => <RemoveQuota tenantId={tenantId} quota={q} onRemoved={reload} /> },
  ];
}

/** "3 of 8 GPU-equivalent", with a bar. */
function Use({ quota: q }: { quota: Quota }) {
  const pct = q.max > 0 ? divide(multiply(q.used, 100), String(q.max), 0) : '100';
  const full = compare(q.used, String(q.max)) >= 0;
  return (
    <span class="share">
      <span class="share-track" aria-hidden="true">
        <span class={`share-fill${full ? ' is-over' : ''}`} style={{ width: `${Math.min(100, Number(pct))}%` }} />
      </span>
      {`${groupDigits(q.used)} of ${groupDigits(String(q.max))} ${q.unit}`}
    </span>
  );
}

function RemoveQuota({ tenantId, quota: q, onRemoved }: { tenantId: string; quota: Quota; onRemoved: () => void }) {
  const set = useMutation(SetQuota);
  const run = async () => {
    const ok = (await set.run({ input: { tenantId, scope: q.scope, value: q.value, max: -1 } })) !== null;
    if (ok) onRemoved();
    return ok;
  };
  return <ConfirmButton label="Remove" confirmLabel="Confirm removal" what={`quota ${scopeLabel(q.scope)} ${q.value}`.trim()} pending={set.pending} error={set.error} onConfirm={run} />;
}
