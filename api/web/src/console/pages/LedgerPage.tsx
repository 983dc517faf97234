import { enumLabel, groupDigits, money } from '../../lib/format';
import { useQuery } from '../../lib/hooks';
import { Badge } from '../../ui/Badge';
import { type Column, DataTable } from '../../ui/DataTable';
import { Link } from '../../ui/Link';
import { ErrorNotice, Loading } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { Stat } from '../../ui/Stat';
import { ownerPath } from '../ledgerOwner';
import { Ledger, type LedgerResult } from '../operations';

type Balance = LedgerResult['ledgerBalances'][number];

/** The money ledger for finance: whether it balances, every account, the journal. */
export function LedgerPage() {
  const { data, error, loading, reload } = useQuery(Ledger, {});
  const check = data?.ledgerCheck;
  return (
    <Page
      title="Ledger"
      lead="Every invoice, payment, credit, credit note and refund as balanced double-entry transfers."
      actions={
        <a class="btn" href="/v1/ledger/journal.csv" download>
          Download the journal (CSV)
        </a>
      }
    >
      <ErrorNotice error={error} onRetry={reload} />
      {!data && loading && <Loading label="Loading the ledger…" />}
      {check && (
        <div class="stats">
          <Stat
            label="Check"
            value={check.balanced ? <Badge tone="good">Balanced</Badge> : <Badge tone="bad">Unbalanced</Badge>}
            note={check.balanced ? 'Debits equal credits in every currency and transfer.' : unbalancedNote(check.unbalancedCurrencies)}
          />
          <Stat label="Transfers" value={groupDigits(String(check.transfers))} />
          <Stat label="Entries" value={groupDigits(String(check.entries))} />
        </div>
      )}
      {data && (
        <Section title="Accounts">
          <DataTable
            virtual
            caption="Ledger accounts with their totals"
            hideCaption
            columns={COLUMNS}
            rows={data.ledgerBalances}
            rowKey={(b) => `${b.account}-${b.ownerId ?? ''}-${b.currency}`}
            empty="Nothing posted yet."
          />
        </Section>
      )}
    </Page>
  );
}

function unbalancedNote(off: { currency: string; offBy: string }[]): string {
  return off.map((o) => `${o.currency} off by ${o.offBy}`).join(', ') || 'A transfer does not balance.';
}

/** An account's owner by the name the API gives, linked to its tenant or provider page. */
function Owner({ balance: b }: { balance: Balance }) {
  if (!b.ownerId) return <>Platform</>;
  const name = b.ownerName ?? b.ownerId;
  const to = ownerPath(b.account, b.ownerId);
  return to ? <Link to={to}>{name}</Link> : <>{name}</>;
}

const COLUMNS: Column<Balance>[] = [
  { header: 'Account', cell: (b) => enumLabel(b.account) },
  { header: 'Owner', cell: (b) => <Owner balance={b} /> },
  { header: 'Debits', numeric: true, cell: (b) => money(b.debits, b.currency) },
  { header: 'Credits', numeric: true, cell: (b) => money(b.credits, b.currency) },
  { header: 'Balance', numeric: true, cell: (b) => money(b.balance, b.currency) },
];
