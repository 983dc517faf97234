import { useState } from 'preact/hooks';
import { compare, divide, multiply } from '../../lib/decimal';
import { dateTime, enumLabel, money, period } from '../../lib/format';
import { useMutation, useQuery } from '../../lib/hooks';
import { Badge } from '../../ui/Badge';
import { ConfirmButton } from '../../ui/ConfirmButton';
import { type Column, DataTable } from '../../ui/DataTable';
import { DescriptionList } from '../../ui/DescriptionList';
import { ErrorNotice, Loading, Notice } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { SecretOnce } from '../../ui/SecretOnce';
import { Stat } from '../../ui/Stat';
import { isTenantAdmin, useViewer } from '../../ui/viewer';
import { AccountNav } from '../AccountNav';
import { BudgetForm } from '../BudgetForm';
import { Budget, type BudgetDetailFragment, RemoveBudget } from '../operations';

type BudgetEvent = BudgetDetailFragment['events'][number];

/** The monthly budget: spend against the limit, its alerts; admins set or remove it. */
export function BudgetPage() {
  const viewer = useViewer();
  const { data, error, loading, reload } = useQuery(Budget, {});
  const [secret, setSecret] = useState<string | null>(null);
  const admin = isTenantAdmin(viewer);
  const saved = (webhookSecret: string | null) => {
    setSecret(webhookSecret);
    reload();
  };
  const budget = data?.budget ?? null;
  return (
    <Page title="Budget" lead="A monthly spending limit: alerts as the spend crosses its thresholds, and optionally a hard cap on new orders.">
      <AccountNav />
      {!admin && <Notice tone="info">Only admins of your organisation can change the budget.</Notice>}
      {secret && (
        <div class="card form-card">
          <SecretOnce label="Budget webhook signing secret" value={secret} note="Budget alerts sent to a webhook URL are signed with it: your receiver checks their signatures." onDone={() => setSecret(null)} />
        </div>
      )}
      <ErrorNotice error={error} onRetry={reload} />
      {!data && loading && <Loading label="Loading the budget…" />}
      {data && !budget && <p class="empty">No budget is set: nothing limits or alerts on spending.</p>}
      {budget && <BudgetOverview budget={budget} />}
      {data && admin && (
        <Section title={budget ? 'Change the budget' : 'Set a budget'} actions={budget && <Remove onRemoved={reload} />}>
          <BudgetForm budget={budget} currency={viewer.tenant?.currency ?? ''} onSaved={saved} />
        </Section>
      )}
    </Page>
  );
}

function BudgetOverview({ budget }: { budget: BudgetDetailFragment }) {
  const m = (amount: string) => money(amount, budget.currency);
  const state = budget.blockedSince ? 'New orders refused' : budget.hardCap ? 'Hard cap' : 'Alerts only';
  return (
    <>
      {budget.blockedSince && (
        <Notice tone="danger" title="The limit is reached">
          New orders are refused since {dateTime(budget.blockedSince)}. Raise the limit or remove the hard cap to order again.
        </Notice>
      )}
      <div class="stats">
        <Stat label="Spent this period" value={m(budget.spend)} note={<SpendBar spend={budget.spend} limit={budget.monthlyLimit} />} />
        <Stat label="Monthly limit" value={m(budget.monthlyLimit)} note={period(budget.periodStart, budget.periodEnd)} />
        <Stat label="When reached" value={state} note={budget.stopAllocations ? 'running allocations are stopped too' : 'running allocations continue'} />
      </div>
      <Section title="Settings">
        <DescriptionList
          items={[
            ['Alert thresholds', budget.alertThresholds.map((t) => `${t}%`).join(', ') || 'None'],
            ['Alert webhook', budget.webhookUrl ? <code>{budget.webhookUrl}</code> : 'None'],
          ]}
        />
      </Section>
      <Section title="Alerts this period">
        <DataTable caption="Budget alerts this period" hideCaption columns={eventColumns(m)} rows={budget.events} rowKey={(e) => e.id} empty="No alert yet this period." />
      </Section>
    </>
  );
}

/** "42.5% of the limit", with a bar (the text says it; the bar repeats it). */
function SpendBar({ spend, limit }: { spend: string; limit: string }) {
  if (compare(limit, '0') <= 0) return null;
  const pct = divide(multiply(spend, 100), limit, 1);
  const over = compare(pct, '100') >= 0;
  return (
    <span class="share">
      <span class="share-track" aria-hidden="true">
        <span class={`share-fill${over ? ' is-over' : ''}`} style={{ width: `${Math.min(100, Math.max(0, Number(pct)))}%` }} />
      </span>
      {`${pct}% of the limit`}
    </span>
  );
}

function eventColumns(m: (amount: string) => string): Column<BudgetEvent>[] {
  return [
    { header: 'When', cell: (e) => dateTime(e.at) },
    { header: 'Alert', cell: (e) => (e.kind === 'ALLOCATIONS_STOPPED' ? 'Allocations stopped' : `${e.thresholdPct}% crossed`) },
    { header: 'Spend', numeric: true, cell: (e) => m(e.spend) },
    { header: 'Limit then', numeric: true, cell: (e) => m(e.monthlyLimit) },
    { header: 'Webhook', cell: (e) => <Badge tone={e.webhookStatus === 'FAILED' ? 'bad' : e.webhookStatus === 'DELIVERED' ? 'good' : 'neutral'}>{enumLabel(e.webhookStatus)}</Badge> },
  ];
}

function Remove({ onRemoved }: { onRemoved: () => void }) {
  const remove = useMutation(RemoveBudget);
  const run = async () => {
    const ok = (await remove.run({})) !== null;
    if (ok) onRemoved();
    return ok;
  };
  return <ConfirmButton label="Remove budget" confirmLabel="Confirm removal" pending={remove.pending} error={remove.error} onConfirm={run} />;
}
