import { compare } from '../lib/decimal';
import { enumLabel, groupDigits, money, period } from '../lib/format';
import { shortId } from '../lib/ids';
import { type Column, DataTable } from '../ui/DataTable';
import { DescriptionList } from '../ui/DescriptionList';
import { Stat } from '../ui/Stat';
import type { PreviewPlanVersionResult } from './operations';
import { metricLabel } from './rate';

export type Preview = PreviewPlanVersionResult['previewPlanVersion'];
type Line = Preview['lines'][number] & { n: number };

/** The invoice compared, its totals against the proposed ones, and the proposed lines. */
export function PlanPreview({ preview: p, tenant }: { preview: Preview; tenant: string }) {
  const m = (amount: string) => money(amount, p.currency);
  const invoice = p.invoiceNumber ?? shortId(p.invoiceId);
  return (
    <div class="preview" aria-live="polite">
      <h4 class="preview-title">{`Invoice ${invoice} of ${tenant}, ${period(p.periodStart, p.periodEnd)}`}</h4>
      <div class="stats">
        <Stat label="Current subtotal" value={m(p.currentSubtotal)} note={`rated with ${p.currentPlan}`} />
        <Stat label="Proposed subtotal" value={m(p.subtotal)} note="with this version" />
        <Stat label="Difference" value={<Difference amount={p.difference} currency={p.currency} />} note="proposed − current subtotal" />
        <Stat label="Proposed total" value={m(p.total)} note={`now ${m(p.currentTotal)}`} />
      </div>
      <DescriptionList
        items={[
          ['Invoice compared', invoice],
          ['Period', period(p.periodStart, p.periodEnd)],
          ['Current plan', p.currentPlan],
          ['Current total', m(p.currentTotal)],
          ['Proposed tax', m(p.tax)],
          ['Credits applied', m(p.credits)],
        ]}
      />
      <h4 class="subhead">Proposed lines</h4>
      <DataTable virtual caption={`Lines of invoice ${invoice} under this version`} hideCaption columns={lineColumns(p.currency)} rows={p.lines.map((l, n) => ({ ...l, n }))} rowKey={(l) => String(l.n)} empty="No lines: the period had no usage." />
    </div>
  );
}

/** "▲ +$12.00 more", "▼ −$3.00 less", "No change": signed, and the words say which way. */
export function Difference({ amount, currency }: { amount: string; currency: string }) {
  const sign = compare(amount, '0');
  if (sign === 0) return <span class="delta delta-zero">No change</span>;
  return (
    <span class={`delta ${sign > 0 ? 'delta-up' : 'delta-down'}`}>
      <span aria-hidden="true">{sign > 0 ? '▲ ' : '▼ '}</span>
      {`${sign > 0 ? '+' : ''}${money(amount, currency)} ${sign > 0 ? 'more' : 'less'}`}
    </span>
  );
}

function lineColumns(currency: string): Column<Line>[] {
  return [
    { header: 'Kind', cell: (l) => enumLabel(l.kind) },
    { header: 'Description', cell: (l) => l.description },
    { header: 'SKU', cell: (l) => l.sku ?? '—' },
    { header: 'Metric', cell: (l) => (l.metric ? metricLabel(l.metric) : '—') },
    { header: 'Tier', numeric: true, cell: (l) => l.tier ?? '—' },
    { header: 'Quantity', numeric: true, cell: (l) => `${groupDigits(l.quantity)} ${l.unit}` },
    { header: 'Unit price', numeric: true, cell: (l) => money(l.unitPrice, currency) },
    { header: 'Amount', numeric: true, cell: (l) => money(l.amount, currency) },
  ];
}
