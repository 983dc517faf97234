import { compare, sum } from '../lib/decimal';
import { money, period } from '../lib/format';
import { type Column, DataTable } from '../ui/DataTable';
import { Link } from '../ui/Link';
import { Section } from '../ui/Page';
import type { SpendSummaryResult } from './operations';
import { chargesBySku, type SkuCharge } from './usageSeries';

type Upcoming = SpendSummaryResult['upcomingInvoice'];

/**
 * The billing period's charges so far per SKU: the upcoming invoice's line amounts summed
 * exactly per SKU (the invoice's own lines: usage rows' costs leave out commitments and
 * credits). A bar beside each shows its share.
 */
export function ChargesBySku({ invoice }: { invoice: Upcoming }) {
  const rows = chargesBySku(invoice.lines);
  const positive = rows.map((r) => r.amount).filter((a) => compare(a, '0') > 0);
  const largest = positive.reduce((m, a) => (compare(a, m) > 0 ? a : m), '0');
  const columns: Column<SkuCharge>[] = [
    { header: 'SKU', cell: (r) => r.sku ?? <span class="muted">No SKU (commitments, credits)</span> },
    { header: 'Charges', numeric: true, cell: (r) => money(r.amount, invoice.currency) },
    { header: 'Share of the largest', hiddenHeader: true, cell: (r) => <ShareBar amount={r.amount} largest={largest} /> },
  ];
  return (
    <Section title="Charges by SKU">
      <p class="section-lead muted">{`Charges so far this period (from the upcoming invoice), ${period(invoice.periodStart, invoice.periodEnd)}, before tax.`}</p>
      <DataTable caption="Charges so far this period per SKU, from the upcoming invoice" hideCaption compact columns={columns} rows={rows} rowKey={(r) => r.sku ?? ''} empty="No charges yet this period." />
      {rows.length > 0 && (
        <p class="muted small">
          {`Its lines come to ${money(sum(invoice.lines.map((l) => l.amount)), invoice.currency)}; with tax and credits the invoice so far is ${money(invoice.total, invoice.currency)}. `}
          <Link to="/invoices">The upcoming invoice</Link>
        </p>
      )}
    </Section>
  );
}

/** A bar as long as `amount` is against the largest (none for a credit). Positions only. */
function ShareBar({ amount, largest }: { amount: string; largest: string }) {
  const pct = compare(amount, '0') > 0 && compare(largest, '0') > 0 ? (Number(amount) / Number(largest)) * 100 : 0;
  return (
    <span class="share-track charge-track" aria-hidden="true">
      <span class="share-fill" style={{ width: `${Math.min(100, pct)}%` }} />
    </span>
  );
}
