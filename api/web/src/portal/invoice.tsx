import { money } from '../lib/format';
import { type Column, DataTable } from '../ui/DataTable';
import { DescriptionList } from '../ui/DescriptionList';
import { Downloads } from '../ui/Downloads';
import type { InvoiceResult } from './operations';

export type InvoiceDetail = InvoiceResult['invoice'];
type Line = InvoiceDetail['lines'][number];

const INVOICE_FORMATS = [
  ['pdf', 'PDF'],
  ['csv', 'CSV'],
  ['json', 'JSON'],
  ['focus', 'FOCUS'],
] as const;

const CREDIT_NOTE_FORMATS = INVOICE_FORMATS.slice(0, 3);

/** EN 16931 e-invoices, by the format names the export takes. */
const E_INVOICE_LABELS: Record<string, string> = {
  facturx: 'Factur-X PDF',
  ubl: 'UBL (Peppol)',
  cii: 'CII XML',
};

/** Download links (cookie auth): /v1/invoices/{id}/export?format=… */
export function InvoiceDownloads({ id, number, full }: { id: string; number: string | null; full?: boolean }) {
  return <Downloads base={`/v1/invoices/${encodeURIComponent(id)}/export`} what={`invoice ${number ?? id}`} formats={INVOICE_FORMATS} full={full} />;
}

export function CreditNoteDownloads({ id, number }: { id: string; number: string }) {
  return <Downloads base={`/v1/credit-notes/${encodeURIComponent(id)}/export`} what={`credit note ${number}`} formats={CREDIT_NOTE_FORMATS} />;
}

/** The e-invoices an invoice exports as, or what keeps it from them. */
export function EInvoiceDownloads({ invoice }: { invoice: InvoiceDetail }) {
  const { formats, missing } = invoice.eInvoice;
  const offered = formats.map((f) => [f, E_INVOICE_LABELS[f] ?? f] as const);
  return (
    <>
      {offered.length > 0 && (
        <p>
          <Downloads base={`/v1/invoices/${encodeURIComponent(invoice.id)}/export`} what={`invoice ${invoice.number ?? invoice.id}`} formats={offered} full />
        </p>
      )}
      {missing.length > 0 && (
        <ul class="muted">
          {missing.map((m) => (
            <li key={m}>{offered.length > 0 ? 'Other formats: ' : 'Not available: '}{m}</li>
          ))}
        </ul>
      )}
    </>
  );
}

type LineRow = Line & { currency: string; n: number };

const LINE_COLUMNS: Column<LineRow>[] = [
  { header: 'Description', cell: (l) => l.description },
  { header: 'Quantity', numeric: true, cell: (l) => `${l.quantity} ${l.unit}` },
  { header: 'Unit price', numeric: true, cell: (l) => money(l.unitPrice, l.currency) },
  { header: 'Tax', numeric: true, cell: (l) => (l.taxPercent ? `${l.taxPercent}%` : '—') },
  { header: 'Amount', numeric: true, cell: (l) => money(l.amount, l.currency) },
];

/** The lines of an invoice and its totals. */
export function InvoiceLines({ invoice }: { invoice: InvoiceDetail }) {
  const rows: LineRow[] = invoice.lines.map((l, n) => ({ ...l, currency: invoice.currency, n }));
  return (
    <>
      <DataTable virtual caption="Invoice lines" hideCaption columns={LINE_COLUMNS} rows={rows} rowKey={(l) => String(l.n)} empty="No charges yet in this period." />
      <InvoiceTotals invoice={invoice} />
    </>
  );
}

function InvoiceTotals({ invoice }: { invoice: InvoiceDetail }) {
  const m = (amount: string) => money(amount, invoice.currency);
  const items: [string, string][] = [
    ['Subtotal', m(invoice.subtotal)],
    ...invoice.taxes.map((t): [string, string] => [`Tax ${t.percent}% (${t.jurisdiction})`, m(t.tax)]),
  ];
  if (invoice.taxes.length === 0) items.push(['Tax', m(invoice.tax)]);
  if (invoice.credits !== '0' && invoice.credits !== '0.00') items.push(['Credits', `−${m(invoice.credits)}`]);
  items.push(['Total', m(invoice.total)]);
  if (invoice.creditNotes.length > 0) items.push(['Credit notes', `−${m(invoice.creditedTotal)}`]);
  items.push(['Amount due', m(invoice.amountDue)]);
  return (
    <div class="totals">
      <DescriptionList items={items} />
    </div>
  );
}
