import { date, enumLabel, money } from '../lib/format';
import { useQuery } from '../lib/hooks';
import { type Column, DataTable } from '../ui/DataTable';
import { ErrorNotice, Loading } from '../ui/Notice';
import { Section } from '../ui/Page';
import { CreditForm } from './CreditForm';
import { type CreditGrantRowFragment, TenantCredits } from './operations';

type Grant = CreditGrantRowFragment;

/** The tenant's credit grants with what is left of each; grant more. */
export function CreditSection({ tenantId, currency }: { tenantId: string; currency: string }) {
  const { data, error, loading, reload } = useQuery(TenantCredits, { tenantId });
  return (
    <Section title="Credits">
      <ErrorNotice error={error} onRetry={reload} />
      {!data && loading && <Loading label="Loading credits…" />}
      {data && <DataTable virtual caption="Credit grants" hideCaption columns={COLUMNS} rows={data.creditGrants} rowKey={(g) => g.id} loading={loading} empty="No credit granted." />}
      <CreditForm tenantId={tenantId} currency={currency} onGranted={reload} />
    </Section>
  );
}

const COLUMNS: Column<Grant>[] = [
  { header: 'Kind', cell: (g) => enumLabel(g.kind) },
  { header: 'Reason', cell: (g) => g.reason || '—' },
  { header: 'Usable from', cell: (g) => date(g.effectiveAt) },
  { header: 'Pays charges from', cell: (g) => date(g.coversFrom) },
  { header: 'Expires', cell: (g) => (g.expiresAt ? date(g.expiresAt) : 'Never') },
  { header: 'Amount', numeric: true, cell: (g) => money(g.amount, g.currency) },
  { header: 'Remaining', numeric: true, cell: (g) => money(g.remaining, g.currency) },
];
