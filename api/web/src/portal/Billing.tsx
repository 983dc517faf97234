import { useEffect, useState } from 'preact/hooks';
import { date, dateTime, enumLabel, money } from '../lib/format';
import { useQuery } from '../lib/hooks';
import { StatusBadge } from '../ui/Badge';
import { type Column, DataTable } from '../ui/DataTable';
import { DescriptionList } from '../ui/DescriptionList';
import { ErrorNotice } from '../ui/Notice';
import { Section } from '../ui/Page';
import { isTenantAdmin, useViewer } from '../ui/viewer';
import { Billing as BillingQuery, type BillingResult } from './operations';
import { AddCard, RemoveCard } from './AddCard';
import { BuyCredit } from './BuyCredit';

type TopUp = BillingResult['topUps'][number];
type Grant = BillingResult['creditGrants'][number];
type Account = NonNullable<BillingResult['paymentAccount']>;

/** While a top-up waits for its payment, the billing section is asked again this often. */
const POLL_MS = 5_000;

/**
 * How invoices are paid: the payment account, prepaid top-ups and credit grants; admins
 * add, replace or remove a card and buy credit with the default payment method.
 */
export function Billing() {
  const viewer = useViewer();
  // The top-up bought on this page, watched until its payment has an outcome.
  const [watched, setWatched] = useState<string | null>(null);
  const [waiting, setWaiting] = useState(false);
  const { data, error, reload } = useQuery(BillingQuery, {}, { pollMs: waiting ? POLL_MS : undefined });
  const status = data?.topUps.find((t) => t.id === watched)?.status;
  useEffect(() => setWaiting(watched !== null && (status === undefined || status === 'PENDING')), [watched, status]);
  const started = (id: string) => {
    setWatched(id);
    reload();
  };
  if (!data && !error) return null;
  return (
    <Section title="Billing">
      <ErrorNotice error={error} onRetry={reload} />
      {data && (
        <>
          <PaymentAccount account={data.paymentAccount} />
          {isTenantAdmin(viewer) && data.cardSetupAvailable && <AddCard hasMethod={Boolean(data.paymentAccount?.defaultPaymentMethod)} onAdded={reload} />}
          {isTenantAdmin(viewer) && data.paymentAccount?.defaultPaymentMethod && <RemoveCard label={data.paymentAccount.defaultPaymentMethodLabel ?? 'the card'} onRemoved={reload} />}
          <h3 class="subhead">Credits</h3>
          <DataTable virtual caption="Credit grants" hideCaption columns={GRANT_COLUMNS} rows={data.creditGrants} rowKey={(g) => g.id} empty="No credit granted." />
          {isTenantAdmin(viewer) && <BuyCredit account={data.paymentAccount} cardSetupAvailable={data.cardSetupAvailable} topUps={data.topUps} currency={viewer.tenant?.currency ?? 'USD'} onStarted={started} />}
          <h3 class="subhead">Top-ups</h3>
          <DataTable caption="Prepaid top-ups, newest first" hideCaption columns={TOP_UP_COLUMNS} rows={data.topUps} rowKey={(t) => t.id} empty="No top-ups." />
        </>
      )}
    </Section>
  );
}

const MODES: Record<Account['collectionMode'], string> = {
  CHARGE_AUTOMATICALLY: 'Charged automatically to the default payment method',
  SEND_INVOICE: 'Invoices sent for payment by transfer',
};

function PaymentAccount({ account }: { account: Account | null }) {
  if (!account) return <p class="muted">No payment account is set up: invoices are settled as agreed with your operator.</p>;
  return (
    <DescriptionList
      items={[
        ['Collection', MODES[account.collectionMode]],
        ['Payment terms', account.collectionMode === 'SEND_INVOICE' ? `${account.daysUntilDue} days` : '—'],
        ['Default payment method', methodLabel(account)],
        ['Updated', dateTime(account.updatedAt)],
      ]}
    />
  );
}

function methodLabel(account: Account) {
  if (!account.defaultPaymentMethod) return 'None';
  return account.defaultPaymentMethodLabel ?? <code>{account.defaultPaymentMethod}</code>;
}

const GRANT_COLUMNS: Column<Grant>[] = [
  { header: 'Kind', cell: (g) => enumLabel(g.kind) },
  { header: 'Reason', cell: (g) => g.reason || '—' },
  { header: 'From', cell: (g) => date(g.effectiveAt) },
  { header: 'Expires', cell: (g) => (g.expiresAt ? date(g.expiresAt) : 'Never') },
  { header: 'Amount', numeric: true, cell: (g) => money(g.amount, g.currency) },
  { header: 'Remaining', numeric: true, cell: (g) => money(g.remaining, g.currency) },
];

const TOP_UP_COLUMNS: Column<TopUp>[] = [
  { header: 'When', cell: (t) => dateTime(t.createdAt) },
  { header: 'Status', cell: (t) => <StatusBadge value={t.status} /> },
  { header: 'Note', cell: (t) => t.failure ?? '—' },
  { header: 'Amount', numeric: true, cell: (t) => money(t.amount, t.currency) },
];
