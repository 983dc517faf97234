import { Link } from '../ui/Link';
import { Notice } from '../ui/Notice';
import { exchangeRatesPath, pairLabel, rateNeeded, readableReason, type StatementHoldLike } from './exchangeRates';

/**
 * Why a provider's next statement has not closed (`Provider.statementHeld`: an exchange
 * rate missing), with the way to the form that adds it; nothing when nothing holds it.
 */
export function StatementHeld({ hold, title = 'The next statement is held' }: { hold: StatementHoldLike | null | undefined; title?: string }) {
  if (!hold) return null;
  const needed = rateNeeded(hold);
  return (
    <Notice tone="warning" title={title}>
      <p>{readableReason(hold.reason)}</p>
      <p>
        <Link to={exchangeRatesPath(needed)}>{`Add the ${pairLabel(needed.from, needed.to)} rate →`}</Link> It closes on the next sweep once the rate is in.
      </p>
    </Notice>
  );
}
