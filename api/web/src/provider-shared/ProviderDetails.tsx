import { dateTime } from '../lib/format';
import { DescriptionList } from '../ui/DescriptionList';
import { payoutMethodLabel, percent } from './payouts';

/** What `Provider` says of a provider's legal and payout details. */
export interface ProviderDetailsLike {
  id: string;
  name: string;
  legalName: string;
  country: string;
  currency: string;
  payoutMethod: string;
  payoutAccount: string | null;
  createdAt: string;
  reliability: string | null;
}

/** A provider's name, legal and payout details and reliability. */
export function ProviderDetails({ provider: p }: { provider: ProviderDetailsLike }) {
  return (
    <DescriptionList
      items={[
        ['Name', p.name],
        ['Legal name', p.legalName],
        ['Country', p.country || '—'],
        ['Currency', p.currency],
        ['Payout method', payoutMethodLabel(p.payoutMethod.toLowerCase())],
        ['Payout account', p.payoutAccount ? <code class="wrap">{p.payoutAccount}</code> : '—'],
        ['Reliability (30 days)', p.reliability ? percent(p.reliability) : 'No record yet'],
        ['Created', dateTime(p.createdAt)],
        ['Id', <code>{p.id}</code>],
      ]}
    />
  );
}
