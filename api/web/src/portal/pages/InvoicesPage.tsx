import { date, dateTime, money, period } from '../../lib/format';
import { usePaged, useQuery } from '../../lib/hooks';
import { StatusBadge } from '../../ui/Badge';
import { type Column, DataTable, LoadMore } from '../../ui/DataTable';
import { Link } from '../../ui/Link';
import { ErrorNotice, Loading } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { Billing } from '../Billing';
import { CreditNoteDownloads, InvoiceDownloads, InvoiceLines } from '../invoice';
import { CreditNotes, type CreditNotesResult, Invoices, type InvoicesResult, UpcomingInvoice } from '../operations';

type Summary = InvoicesResult['invoices']['nodes'][number];
type CreditNote = CreditNotesResult['creditNotes'][number];

const PAGE_SIZE = 24;

/** The open period's invoice as it stands, finalized invoices, and credit notes. */
export function InvoicesPage() {
  return (
    <Page title="Invoices" lead="What this billing period costs so far, and every invoice with its downloads.">
      <Upcoming />
      <InvoiceList />
      <CreditNoteList />
      <Billing />
    </Page>
  );
}

function Upcoming() {
  const { data, error, loading, reload } = useQuery(UpcomingInvoice, {});
  const invoice = data?.upcomingInvoice;
  return (
    <Section title="Upcoming invoice" actions={invoice && <Link to={`/invoices/${invoice.id}`}>Details</Link>}>
      <ErrorNotice error={error} onRetry={reload} />
      {!invoice && loading && <Loading label="Rating this period…" />}
      {invoice && (
        <div class="card">
          <p class="card-title">
            {period(invoice.periodStart, invoice.periodEnd)} · <span class="muted">{invoice.plan}</span>
          </p>
          <p class="big-number">
            {money(invoice.total, invoice.currency)} <span class="muted small">so far</span>
          </p>
          <InvoiceLines invoice={invoice} />
        </div>
      )}
    </Section>
  );
}

function InvoiceList() {
  const paged = usePaged(Invoices, { first: PAGE_SIZE }, (r) => r.invoices);
  const finalized = paged.items.filter((i) => i.finalized);
  return (
    <Section title="Invoices">
      <ErrorNotice error={paged.error} onRetry={paged.reload} />
      {paged.loading && paged.items.length === 0 ? (
        <Loading label="Loading invoices…" />
      ) : (
        <DataTable virtual caption="Finalized invoices" hideCaption columns={INVOICE_COLUMNS} rows={finalized} rowKey={(i) => i.id} loading={paged.loading} empty="No invoices yet: the first one is issued when this billing period closes." />
      )}
      <LoadMore hasMore={paged.hasMore} loading={paged.loading} onLoadMore={paged.loadMore} count={finalized.length} />
    </Section>
  );
}

const INVOICE_COLUMNS: Column<Summary>[] = [
  { header: 'Invoice', cell: (i) => <Link to={`/invoices/${i.id}`}>{i.number ?? 'Draft'}</Link> },
  { header: 'Period', cell: (i) => period(i.periodStart, i.periodEnd) },
  { header: 'Status', cell: (i) => <StatusBadge value={i.status} /> },
  { header: 'Due', cell: (i) => date(i.dueAt) },
  { header: 'Total', numeric: true, cell: (i) => money(i.total, i.currency) },
  { header: 'Download', cell: (i) => <InvoiceDownloads id={i.id} number={i.number} /> },
];

function CreditNoteList() {
  const { data, error, reload } = useQuery(CreditNotes, {});
  if (!data && !error) return null;
  return (
    <Section title="Credit notes">
      <ErrorNotice error={error} onRetry={reload} />
      {data && <DataTable virtual caption="Credit notes with downloads" hideCaption columns={CREDIT_NOTE_COLUMNS} rows={data.creditNotes} rowKey={(c) => c.id} empty="No credit notes." />}
    </Section>
  );
}

const CREDIT_NOTE_COLUMNS: Column<CreditNote>[] = [
  { header: 'Credit note', cell: (c) => c.number },
  { header: 'Invoice', cell: (c) => <Link to={`/invoices/${c.invoiceId}`}>View invoice</Link> },
  { header: 'Issued', cell: (c) => dateTime(c.issuedAt) },
  { header: 'Reason', cell: (c) => c.reason },
  { header: 'Total', numeric: true, cell: (c) => money(c.total, c.currency) },
  { header: 'Download', cell: (c) => <CreditNoteDownloads id={c.id} number={c.number} /> },
];
