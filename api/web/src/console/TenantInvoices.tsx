import { useState } from 'preact/hooks';
import { compare } from '../lib/decimal';
import { date, money, period } from '../lib/format';
import { useMutation, usePaged } from '../lib/hooks';
import { StatusBadge } from '../ui/Badge';
import { ConfirmButton } from '../ui/ConfirmButton';
import { type Column, DataTable, LoadMore } from '../ui/DataTable';
import { ErrorNotice, Loading, Notice } from '../ui/Notice';
import { Section } from '../ui/Page';
import { CloseBillingPeriod, TenantInvoices as TenantInvoicesQuery, type TenantInvoicesResult } from './operations';
import { VoidInvoice } from './VoidInvoice';

type Summary = TenantInvoicesResult['invoices']['nodes'][number];

const PAGE_SIZE = 24;

/** The tenant's invoices (the open draft among them); close the period, void an invoice. */
export function TenantInvoices({ tenantId }: { tenantId: string }) {
  const paged = usePaged(TenantInvoicesQuery, { tenantId, first: PAGE_SIZE }, (r) => r.invoices);
  const [note, setNote] = useState<string | null>(null);
  const closed = (text: string) => {
    setNote(text);
    paged.reload();
  };
  return (
    <Section title="Invoices" actions={<ClosePeriod tenantId={tenantId} onClosed={closed} />}>
      {note && <Notice tone="success">{note}</Notice>}
      <ErrorNotice error={paged.error} onRetry={paged.reload} />
      {paged.loading && paged.items.length === 0 ? (
        <Loading label="Loading invoices…" />
      ) : (
        <DataTable virtual caption="Invoices of this tenant" hideCaption columns={columns(paged.reload)} rows={paged.items} rowKey={(i) => i.id} loading={paged.loading} empty="No invoices." />
      )}
      <LoadMore hasMore={paged.hasMore} loading={paged.loading} onLoadMore={paged.loadMore} count={paged.items.length} />
    </Section>
  );
}

function ClosePeriod({ tenantId, onClosed }: { tenantId: string; onClosed: (note: string) => void }) {
  const close = useMutation(CloseBillingPeriod);
  const run = async () => {
    const r = await close.run({ tenantId });
    if (r) onClosed(`Invoice ${r.closeBillingPeriod.number ?? ''} finalized: ${money(r.closeBillingPeriod.total, r.closeBillingPeriod.currency)}. The next period has started.`);
    return r !== null;
  };
  return <ConfirmButton label="Close billing period" confirmLabel="Confirm close" what="now" pending={close.pending} error={close.error} onConfirm={run} />;
}

/** Open, overdue or uncollectible; paid only when credits alone settled it. */
function voidable(i: Summary): boolean {
  if (i.status === 'OPEN' || i.status === 'OVERDUE' || i.status === 'UNCOLLECTIBLE') return true;
  return i.status === 'PAID' && compare(i.total, '0') <= 0;
}

function columns(reload: () => void): Column<Summary>[] {
  return [
    { header: 'Invoice', cell: (i) => i.number ?? (i.finalized ? '—' : 'Draft (open period)') },
    { header: 'Period', cell: (i) => period(i.periodStart, i.periodEnd) },
    { header: 'Status', cell: (i) => <StatusBadge value={i.status} /> },
    { header: 'Due', cell: (i) => date(i.dueAt) },
    { header: 'Total', numeric: true, cell: (i) => money(i.total, i.currency) },
    { header: 'Actions', hiddenHeader: true, cell: (i) => voidable(i) && <VoidInvoice id={i.id} number={i.number ?? i.id} onVoided={reload} /> },
  ];
}
