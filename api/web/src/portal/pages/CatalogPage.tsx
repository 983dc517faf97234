import { useState } from 'preact/hooks';
import { useQuery } from '../../lib/hooks';
import { money } from '../../lib/format';
import { Badge } from '../../ui/Badge';
import { Button } from '../../ui/Button';
import { type Column, DataTable } from '../../ui/DataTable';
import { ErrorNotice, Loading } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { formLabel, orderable, type Sku } from '../catalog';
import { Catalog } from '../operations';
import { OrderForm } from './OrderForm';

/** How often availability is refreshed while the page is open. */
const POLL_MS = 15_000;

/** The catalog with prices and live availability, and the order form. */
export function CatalogPage() {
  const { data, error, loading, reload } = useQuery(Catalog, {}, { pollMs: POLL_MS });
  const [selected, setSelected] = useState<string | null>(null);
  const skus = orderable(data?.catalog.skus ?? []);
  const choose = (sku: Sku) => {
    setSelected(sku.id);
    document.getElementById('order-form')?.scrollIntoView({ block: 'start' });
    document.getElementById('order-sku')?.focus();
  };
  return (
    <Page title="Catalog" lead="GPUs you can order now, with your price per unit-hour. Availability refreshes every few seconds.">
      <ErrorNotice error={data ? null : error} onRetry={reload} />
      {!data && loading && <Loading label="Loading the catalog…" />}
      {data && (
        <div class="catalog-grid">
          <Section title="Available SKUs">
            <DataTable caption="SKUs with prices per unit-hour and units available" hideCaption columns={columns(choose)} rows={skus} rowKey={(s) => s.id} empty="Nothing can be ordered right now." />
          </Section>
          <Section title="Place an order">
            <OrderForm skus={skus} selected={selected} onSelect={setSelected} />
          </Section>
        </div>
      )}
    </Page>
  );
}

function columns(choose: (sku: Sku) => void): Column<Sku>[] {
  return [
    { header: 'SKU', cell: (s) => <SkuName sku={s} /> },
    { header: 'Unit', cell: (s) => s.unit },
    { header: 'Region', cell: (s) => s.region },
    { header: 'On demand / h', numeric: true, cell: (s) => money(s.pricePerHour, s.currency) },
    { header: 'Spot / h', numeric: true, cell: (s) => money(s.spotPricePerHour, s.currency) },
    { header: 'Available', numeric: true, cell: (s) => <Availability sku={s} /> },
    {
      header: 'Order',
      hiddenHeader: true,
      cell: (s) => (
        <Button small onClick={() => choose(s)} disabled={s.available === 0} aria-label={`Order ${s.name}`}>
          Order
        </Button>
      ),
    },
  ];
}

function SkuName({ sku }: { sku: Sku }) {
  const detail = [formLabel(sku.form), sku.memoryMib ? `${Math.round(sku.memoryMib / 1024)} GiB` : null].filter(Boolean).join(' · ');
  return (
    <div class="cell-stack">
      <strong>{sku.name}</strong>
      <span class="muted">{detail}</span>
    </div>
  );
}

function Availability({ sku }: { sku: Sku }) {
  if (sku.available === 0) return <Badge tone="bad">Sold out</Badge>;
  return <Badge tone={sku.available < 4 ? 'warn' : 'good'}>{sku.available}</Badge>;
}
