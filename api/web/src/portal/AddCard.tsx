import { useEffect, useRef, useState } from 'preact/hooks';
import { useMutation } from '../lib/hooks';
import { type CardElement, loadStripe, type StripeJs } from '../lib/stripe';
import { Button } from '../ui/Button';
import { ConfirmButton } from '../ui/ConfirmButton';
import { ErrorNotice, Notice } from '../ui/Notice';
import { FinishCardSetup, RemovePaymentMethod, StartCardSetup } from './operations';

interface Form {
  stripe: StripeJs;
  card: CardElement;
  clientSecret: string;
}

/**
 * Adds a card (admins): Stripe's card form opens in the page, the card is confirmed with
 * Stripe (3-D Secure included), and the confirmed card becomes the default payment
 * method, charged for invoices and top-ups from then on.
 */
export function AddCard({ hasMethod, onAdded }: { hasMethod: boolean; onAdded: () => void }) {
  const start = useMutation(StartCardSetup);
  const finish = useMutation(FinishCardSetup);
  const target = useRef<HTMLDivElement>(null);
  const [form, setForm] = useState<Form | null>(null);
  const [opening, setOpening] = useState(false);
  const [saving, setSaving] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const [added, setAdded] = useState<string | null>(null);
  // The card form is destroyed once, when it is replaced or closed, or the page left.
  useEffect(() => () => form?.card.destroy(), [form]);
  // A card removed since is no longer the default the notice announced.
  useEffect(() => {
    if (!hasMethod) setAdded(null);
  }, [hasMethod]);

  const open = async () => {
    setProblem(null);
    setAdded(null);
    setOpening(true);
    try {
      const r = await start.run({});
      if (!r || !target.current) return;
      const setup = r.startCardSetup;
      const stripe = await loadStripe(setup.stripeJsUrl, setup.publishableKey);
      const card = stripe.elements().create('card');
      card.mount(target.current);
      setForm({ stripe, card, clientSecret: setup.clientSecret });
    } catch (e) {
      setProblem(e instanceof Error ? e.message : String(e));
    } finally {
      setOpening(false);
    }
  };
  const close = () => setForm(null);
  const save = async (e: Event) => {
    e.preventDefault();
    if (!form) return;
    setProblem(null);
    setSaving(true);
    try {
      const confirmed = await form.stripe.confirmCardSetup(form.clientSecret, { payment_method: { card: form.card } });
      if (confirmed.error || !confirmed.setupIntent) {
        setProblem(confirmed.error?.message ?? 'Stripe did not confirm the card.');
        return;
      }
      const r = await finish.run({ setupIntentId: confirmed.setupIntent.id });
      if (!r) return;
      close();
      setAdded(r.finishCardSetup.defaultPaymentMethodLabel ?? r.finishCardSetup.defaultPaymentMethod);
      onAdded();
    } finally {
      setSaving(false);
    }
  };

  return (
    <>
      <h3 class="subhead">Payment method</h3>
      <form class="card form-card" onSubmit={save} noValidate aria-label="Add a card">
        {added && <Notice tone="success" title="Card added">{added} is now the default payment method.</Notice>}
        <ErrorNotice error={start.error ?? finish.error} />
        {problem && (
          <Notice tone="danger" title="The card was not added">
            <p>{problem}</p>
          </Notice>
        )}
        <div ref={target} class="card-element" hidden={!form} aria-label="Card details" role="group" />
        {form ? (
          <div class="filter-actions">
            <Button type="submit" variant="primary" pending={saving}>
              Save card
            </Button>
            <Button type="button" variant="secondary" onClick={close} disabled={saving}>
              Cancel
            </Button>
          </div>
        ) : (
          <Button type="button" variant={hasMethod ? 'secondary' : 'primary'} pending={opening} onClick={open}>
            {hasMethod ? 'Replace the card' : 'Add a card'}
          </Button>
        )}
      </form>
    </>
  );
}

/**
 * Removes the default card (admins): Stripe forgets it for this account and nothing is
 * charged to it again; invoices and top-ups due wait until a card is added.
 */
export function RemoveCard({ label, onRemoved }: { label: string; onRemoved: () => void }) {
  const remove = useMutation(RemovePaymentMethod);
  const run = async () => {
    const ok = (await remove.run({})) !== null;
    if (ok) onRemoved();
    return ok;
  };
  return (
    <div class="card form-card">
      <p class="section-lead muted">Removing {label} stops charges to it. Invoices and top-ups due wait until another card is added.</p>
      <ConfirmButton label="Remove the card" confirmLabel="Confirm removal" what={label} pending={remove.pending} error={remove.error} onConfirm={run} />
    </div>
  );
}
