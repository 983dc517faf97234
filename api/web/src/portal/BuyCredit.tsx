import { useState } from 'preact/hooks';
import { money } from '../lib/format';
import { useMutation } from '../lib/hooks';
import { newIdempotencyKey } from '../lib/ids';
import { Button } from '../ui/Button';
import { Field, unclaimed } from '../ui/Field';
import { ErrorNotice, Notice } from '../ui/Notice';
import { type BillingResult, StartTopUp, type StartTopUpResult } from './operations';
import { checkTopUpAmount } from './topUp';

type Account = BillingResult['paymentAccount'];
type TopUp = StartTopUpResult['startTopUp'];

interface BuyCreditProps {
  account: Account;
  /** Whether the page offers adding a card (the operator configured Stripe.js). */
  cardSetupAvailable: boolean;
  /** The tenant's top-ups as last read (the one bought here shows its latest status). */
  topUps: readonly BillingResult['topUps'][number][];
  currency: string;
  onStarted: (id: string) => void;
}

/**
 * Buys prepaid credit (admins): the default payment method is charged the amount, an
 * exact decimal string; the idempotency key is this form's own, so a retried click never
 * buys twice, and a new one is made once a top-up has started.
 */
export function BuyCredit({ account, cardSetupAvailable, topUps, currency, onStarted }: BuyCreditProps) {
  const [amount, setAmount] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const [idempotencyKey, setIdempotencyKey] = useState(newIdempotencyKey);
  const [bought, setBought] = useState<TopUp | null>(null);
  const start = useMutation(StartTopUp);
  const method = account?.defaultPaymentMethod ? (account.defaultPaymentMethodLabel ?? account.defaultPaymentMethod) : null;
  const submit = async (e: Event) => {
    e.preventDefault();
    const checked = checkTopUpAmount(amount, currency);
    setProblem('problem' in checked ? checked.problem : null);
    if ('problem' in checked) return;
    const r = await start.run({ amount: checked.amount, idempotencyKey });
    if (!r) return;
    setBought(r.startTopUp);
    setAmount('');
    setIdempotencyKey(newIdempotencyKey());
    onStarted(r.startTopUp.id);
  };
  const latest = bought ? (topUps.find((t) => t.id === bought.id) ?? bought) : null;
  return (
    <>
      <h3 class="subhead">Buy credit</h3>
      <form class="card form-card" onSubmit={submit} noValidate aria-label="Buy credit">
        {latest && <TopUpOutcome topUp={latest} />}
        {!method && (
          <Notice tone="warning" title="No default payment method">
            <p>
              Credit is charged to your organisation's default payment method, and none is set:{' '}
              {cardSetupAvailable ? 'add a card above first.' : 'ask your operator, or set one through the API (setDefaultPaymentMethod).'}
            </p>
          </Notice>
        )}
        <fieldset class="plain" disabled={!method}>
          <Field
            label={`Amount (${currency})`}
            name="amount"
            error={start.error}
            message={problem}
            hint={method ? `From 1 to 1,000,000. Charged at once to ${method}; the credit is granted when the payment succeeds.` : 'From 1 to 1,000,000.'}
          >
            {(p) => <input {...p} type="text" inputMode="decimal" autocomplete="off" placeholder="e.g. 500.00" value={amount} onInput={(e) => setAmount(e.currentTarget.value)} />}
          </Field>
          <ErrorNotice error={unclaimed(start.error, ['amount'])} />
          <Button type="submit" variant="primary" pending={start.pending}>
            Buy credit
          </Button>
        </fieldset>
      </form>
    </>
  );
}

function TopUpOutcome({ topUp: t }: { topUp: Pick<TopUp, 'amount' | 'currency' | 'status' | 'failure'> }) {
  const what = `Top-up of ${money(t.amount, t.currency)}`;
  if (t.status === 'PAID') return <Notice tone="success" title={`${what}: paid`}>The credit is granted and counts against your next invoices.</Notice>;
  if (t.status === 'FAILED') {
    return (
      <Notice tone="danger" title={`${what}: failed`}>
        <p>{t.failure ?? 'The payment was refused.'} Nothing was charged; check the payment method and try again.</p>
      </Notice>
    );
  }
  return (
    <Notice tone="info" title={`${what}: payment pending`}>
      The credit is granted once the payment succeeds; this page follows it.
    </Notice>
  );
}
