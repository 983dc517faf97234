// Stripe.js, loaded only when an admin adds a card, from the URL the operator configured
// (Stripe's own, or a local emulator's in tests). The card is typed into Stripe's form and
// confirmed with Stripe from the browser: its number never reaches neocloud.

/** The part of Stripe.js the portal uses. */
export interface StripeJs {
  elements(): { create(type: 'card'): CardElement };
  confirmCardSetup(
    clientSecret: string,
    data: { payment_method: { card: CardElement } },
  ): Promise<{ error?: { message?: string } | null; setupIntent?: { id: string } }>;
}

export interface CardElement {
  mount(target: HTMLElement): void;
  destroy(): void;
}

declare global {
  interface Window {
    Stripe?: (publishableKey: string) => StripeJs;
  }
}

let loading: Promise<void> | null = null;

/** Loads Stripe.js from `src` once; rejects (and lets a later call try again) if it cannot. */
export function loadStripe(src: string, publishableKey: string): Promise<StripeJs> {
  if (!window.Stripe && !loading) {
    loading = new Promise<void>((resolve, reject) => {
      const script = document.createElement('script');
      script.src = src;
      script.async = true;
      script.onload = () => resolve();
      script.onerror = () => {
        script.remove();
        loading = null;
        reject(new Error(`Stripe's card form could not be loaded from ${src}.`));
      };
      document.head.appendChild(script);
    });
  }
  return (loading ?? Promise.resolve()).then(() => {
    if (!window.Stripe) throw new Error("Stripe's card form did not start.");
    return window.Stripe(publishableKey);
  });
}
