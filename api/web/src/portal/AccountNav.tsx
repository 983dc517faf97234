import { useLocation } from '../lib/router';
import { SubNav } from '../ui/SubNav';

export const ACCOUNT_PAGES = [
  { to: '/account/keys', label: 'API keys' },
  { to: '/account/people', label: 'People' },
  { to: '/account/budget', label: 'Budget' },
  { to: '/account/webhooks', label: 'Webhooks' },
  { to: '/account/security', label: 'Security' },
];

/** The tabs of the account area. */
export function AccountNav() {
  const { path } = useLocation();
  return <SubNav label="Account" items={ACCOUNT_PAGES} path={path === '/account' ? '/account/keys' : path} />;
}
