import { Link } from '../ui/Link';
import { Notice } from '../ui/Notice';
import { exchangeRatesPath, pairLabel, rateNeeded, readableReason } from './exchangeRates';

/**
 * Why a provider's next statement has not closed (`Provider.statementHeld`: an exchange
 * rate missing), with the way to the form that adds it; nothing when nothing holds it.
 */
export function StatementHeld({ reason, title = 'The next statement is held' }: { reason: string | null | undefined; title?: string }) {
  if (!reason) return null;
  const needed = rateNeeded(reason);
  return (
    <Notice tone="warning" title={title}>
      <p>{readableReason(reason)}</p>
      <p>
        <Link to={exchangeRatesPath(needed)}>{needed ? `Add the ${pairLabel(needed.from, needed.to)} rate →` : 'Add the exchange rate →'}</Link> It closes on the next sweep once the rate is in.
      </p>
    </Notice>
  );
}
