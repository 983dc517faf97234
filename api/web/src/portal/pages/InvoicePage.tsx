import { date, dateTime, enumLabel, money, period } from '../../lib/format';
import { useQuery } from '../../lib/hooks';
import { StatusBadge } from '../../ui/Badge';
import { DescriptionList } from '../../ui/DescriptionList';
import { Link } from '../../ui/Link';
import { ErrorNotice, Loading, Notice } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { EInvoiceDownloads, type InvoiceDetail, InvoiceDownloads, InvoiceLines } from '../invoice';
import { Invoice } from '../operations';

/** One invoice: status, dates, amount due, lines, taxes and downloads. */
export function InvoicePage({ params }: { params: Record<string, string> }) {
  const { data, error, loading, reload } = useQuery(Invoice, { id: params['id'] ?? '' });
  const invoice = data?.invoice;
  const title = invoice ? (invoice.number ? `Invoice ${invoice.number}` : 'Draft invoice') : 'Invoice';
  return (
    <Page title={title} lead={<Link to="/invoices">← All invoices</Link>} actions={invoice?.finalizedAt && <InvoiceDownloads id={invoice.id} number={invoice.number} full />}>
      <ErrorNotice error={error} onRetry={reload} />
      {!invoice && loading && <Loading label="Loading the invoice…" />}
      {invoice && <InvoiceBody invoice={invoice} />}
    </Page>
  );
}

function InvoiceBody({ invoice }: { invoice: InvoiceDetail }) {
  return (
    <>
      {invoice.status === 'DRAFT' && <Notice tone="info">This is the open period's draft, rated as of now. It is finalized when the period closes.</Notice>}
      {invoice.voidedAt && <Notice tone="warning" title="Void">{invoice.voidReason ?? 'This invoice was voided.'}</Notice>}
      <Section title="Summary">
        <DescriptionList
          items={[
            ['Status', <StatusBadge value={invoice.status} />],
            ['Payment', enumLabel(invoice.paymentState)],
            ['Period', period(invoice.periodStart, invoice.periodEnd)],
            ['Plan', invoice.plan],
            ['Finalized', dateTime(invoice.finalizedAt)],
            ['Due', date(invoice.dueAt)],
            ['Paid', dateTime(invoice.paidAt)],
            ['Amount due', <strong>{money(invoice.amountDue, invoice.currency)}</strong>],
          ]}
        />
        {invoice.paymentUrl && invoice.amountDue !== '0.00' && (
          <p>
            <a class="btn btn-primary" href={invoice.paymentUrl} rel="noopener noreferrer">
              Pay this invoice
            </a>
          </p>
        )}
      </Section>
      <Section title="Lines">
        <InvoiceLines invoice={invoice} />
      </Section>
      {invoice.finalizedAt && !invoice.voidedAt && (
        <Section title="E-invoice">
          <p>The same invoice as EN 16931 data, for your accounts-payable software: a Factur-X PDF carries it inside, UBL is what Peppol exchanges.</p>
          <EInvoiceDownloads invoice={invoice} />
        </Section>
      )}
      {invoice.taxes.some((t) => t.note) && (
        <Section title="Tax notes">
          <ul>
            {invoice.taxes.filter((t) => t.note).map((t) => (
              <li key={`${t.jurisdiction}-${t.category}`}>{t.note}</li>
            ))}
          </ul>
        </Section>
      )}
      {invoice.creditNotes.length > 0 && (
        <Section title="Credit notes">
          <ul>
            {invoice.creditNotes.map((c) => (
              <li key={c.number}>
                {c.number}: {money(c.total, invoice.currency)}
              </li>
            ))}
          </ul>
        </Section>
      )}
    </>
  );
}
