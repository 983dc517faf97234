import { HeldNotice } from '../provider-shared/HeldNotice';
import type { StatementHoldLike } from '../provider-shared/statementHold';
import { Link } from '../ui/Link';
import { exchangeRatesPath, pairLabel, rateNeeded } from './exchangeRates';

/**
 * Why a provider's next statement has not closed (`Provider.statementHeld`: an exchange
 * rate missing), with the way to the form that adds it; nothing when nothing holds it.
 */
export function StatementHeld({ hold, title }: { hold: StatementHoldLike | null | undefined; title?: string }) {
  if (!hold) return null;
  const needed = rateNeeded(hold);
  return (
    <HeldNotice hold={hold} title={title}>
      <p>
        <Link to={exchangeRatesPath(needed)}>{`Add the ${pairLabel(needed.from, needed.to)} rate →`}</Link> It closes on the next sweep once the rate is in.
      </p>
    </HeldNotice>
  );
}
