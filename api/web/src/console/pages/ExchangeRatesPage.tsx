import { useState } from 'preact/hooks';
import { dateTime, groupDigits } from '../../lib/format';
import { useMutation, useQuery } from '../../lib/hooks';
import { useLocation } from '../../lib/router';
import { readableReason } from '../../provider-shared/statementHold';
import { VersionBadge } from '../../provider-shared/VersionBadge';
import { Button } from '../../ui/Button';
import { type Column, DataTable } from '../../ui/DataTable';
import { Link } from '../../ui/Link';
import { ErrorNotice, Loading, Notice } from '../../ui/Notice';
import { Page, Section } from '../../ui/Page';
import { ExchangeRateForm } from '../ExchangeRateForm';
import { byPairNewestFirst, coveredBy, knownCodes, neededFrom, pairLabel, type RateNeeded, rateNeeded, type RateState, rateStates } from '../exchangeRates';
import { type ExchangeRateRowFragment, ExchangeRates, type ExchangeRatesResult, FetchReferenceRates } from '../operations';

type Rate = ExchangeRateRowFragment;
type Provider = ExchangeRatesResult['providers'][number];
type HeldProvider = Provider & { statementHeld: NonNullable<Provider['statementHeld']> };

/**
 * The operator's exchange rates, each pair's newest first, and a new one. Linked from a
 * held statement's notice with `?from=…&to=…&at=…`, the form starts from that pair; so
 * does "Fill in" beside a held statement here.
 */
export function ExchangeRatesPage() {
  const { query } = useLocation();
  // `n` starts the form afresh (its key) each time a pair is filled in.
  const [start, setStart] = useState<{ needed: RateNeeded | null; n: number }>(() => ({ needed: neededFrom(query), n: 0 }));
  const { data, error, loading, reload } = useQuery(ExchangeRates, {});
  const rates = byPairNewestFirst(data?.exchangeRates ?? []);
  const states = rateStates(rates, new Date());
  const held = (data?.providers ?? []).filter((p): p is HeldProvider => p.statementHeld !== null);
  const codes = knownCodes(rates, (data?.providers ?? []).map((p) => p.currency));
  const fillIn = (needed: RateNeeded) => setStart((s) => ({ needed, n: s.n + 1 }));
  return (
    <Page title="Exchange rates" lead={<Link to="/providers">← Every provider</Link>}>
      <p>A provider paid in another currency than a tenant's invoice earns from it at the rate in force at the end of the invoice's period.</p>
      <ErrorNotice error={error} onRetry={reload} />
      {held.length > 0 && <HeldStatements providers={held} rates={rates} onFillIn={fillIn} />}
      <Section title="Rates">
        {!data && loading && <Loading label="Loading exchange rates…" />}
        {data && (
          <DataTable
            virtual
            caption="Exchange rates, each pair's newest first"
            hideCaption
            columns={columns(states)}
            rows={rates}
            rowKey={(r) => r.id}
            loading={loading}
            empty="No rates yet: none is needed while every provider is paid in its tenants' invoice currency."
          />
        )}
      </Section>
      <Section title="Reference rates">
        <ReferenceRates onRead={reload} />
      </Section>
      <Section title="Add a rate">
        <p class="section-lead muted">Rates are only ever added: a pair's new rate takes over from its start, and statement lines keep the rate they were converted at.</p>
        <ExchangeRateForm key={start.n} needed={start.needed} codes={codes} onAdded={reload} />
      </Section>
    </Page>
  );
}

/**
 * Reads the reference-rate feed now (it is also read every 6 hours where one is
 * configured): the days it held and how many pairs it added.
 */
function ReferenceRates({ onRead }: { onRead: () => void }) {
  const fetch = useMutation(FetchReferenceRates);
  const [read, setRead] = useState<{ day: string; days: number; added: number } | null>(null);
  const run = async () => {
    const r = await fetch.run({});
    if (!r) return;
    setRead(r.fetchReferenceRates);
    onRead();
  };
  return (
    <div class="card form-card">
      <p class="section-lead muted">Where a feed of reference rates is configured (the ECB's daily rates, its 90-day history, or a mirror), every pair of each of its days is added from the day's start; rates entered here for the same instant win.</p>
      {read && (
        <Notice tone="success" title={read.days === 1 ? `Rates of ${read.day}` : `Rates of ${read.days} days up to ${read.day}`}>
          {read.added === 0 ? 'Every pair was in already.' : `${read.added} pairs added.`}
        </Notice>
      )}
      <ErrorNotice error={fetch.error} />
      <Button pending={fetch.pending} onClick={run}>
        Read reference rates now
      </Button>
    </div>
  );
}

interface HeldStatementsProps {
  providers: readonly HeldProvider[];
  rates: readonly Rate[];
  onFillIn: (needed: RateNeeded) => void;
}

/** The providers whose next statement waits for a rate: the reason, and the pair to fill in (or that it is in now). */
function HeldStatements({ providers, rates, onFillIn }: HeldStatementsProps) {
  return (
    <Notice tone="warning" title={providers.length === 1 ? 'A statement waits for a rate' : `${providers.length} statements wait for a rate`}>
      <ul class="plain-list">
        {providers.map((p) => {
          const needed = rateNeeded(p.statementHeld);
          return (
            <li key={p.id}>
              <Link to={`/providers/${encodeURIComponent(p.id)}`}>{p.name}</Link>: {readableReason(p.statementHeld.reason)}{' '}
              {coveredBy(rates, needed) ? (
                <span>The rate is in: it closes on the next sweep.</span>
              ) : (
                <Button small onClick={() => onFillIn(needed)}>
                  Fill in {pairLabel(needed.from, needed.to)}
                </Button>
              )}
            </li>
          );
        })}
      </ul>
    </Notice>
  );
}

function columns(states: ReadonlyMap<Rate, RateState>): Column<Rate>[] {
  const state = (r: Rate) => states.get(r) ?? 'replaced';
  return [
    { header: 'Pair', cell: (r) => <strong>{pairLabel(r.from, r.to)}</strong> },
    { header: 'Rate', numeric: true, cell: (r) => `1 ${r.from} = ${groupDigits(r.rate)} ${r.to}` },
    { header: 'In force from', cell: (r) => dateTime(r.effectiveFrom) },
    { header: 'Status', cell: (r) => <VersionBadge state={state(r)} /> },
    { header: 'Source', cell: (r) => (r.source ? <span class="small">{r.source}</span> : '—') },
  ];
}
