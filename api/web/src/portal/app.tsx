import { invitationPage } from '../people/Invitation';
import { secondFactorRequired } from '../people/SecondFactorRequired';
import type { AppConfig } from '../ui/AppShell';
import { Page } from '../ui/Page';
import { keyOrPasswordSignIn } from '../ui/SignIn';
import { lazyPage } from '../ui/lazy';
import type { Viewer } from '../ui/viewer';
import { AllocationsPage } from './pages/AllocationsPage';
import { ApiKeysPage } from './pages/ApiKeysPage';
import { CatalogPage } from './pages/CatalogPage';
import { InvoicePage } from './pages/InvoicePage';
import { InvoicesPage } from './pages/InvoicesPage';
import { BudgetPage } from './pages/BudgetPage';
import { PeoplePage } from './pages/PeoplePage';
import { SuspensionBanner } from './SuspensionBanner';

const TENANT_ROLES = ['TENANT_ADMIN', 'TENANT_MEMBER', 'TENANT_BILLING'];

// The pages with charts load their code when first opened: the catalog, the first page,
// does not carry it.
const AllocationPage = lazyPage(() => import('./pages/AllocationPage').then((m) => m.AllocationPage));
const UsagePage = lazyPage(() => import('./pages/UsagePage').then((m) => m.UsagePage));
// Account → Webhooks (with its delivery log) and Security (second factor) are seldom
// opened: their own chunks too.
const WebhooksPage = lazyPage(() => import('./pages/WebhooksPage').then((m) => m.WebhooksPage));
const SecurityPage = lazyPage(() => import('./pages/SecurityPage').then((m) => m.SecurityPage));

export const portal: AppConfig = {
  name: 'Portal',
  nav: [
    { to: '/', label: 'Catalog' },
    { to: '/allocations', label: 'Allocations' },
    { to: '/usage', label: 'Usage' },
    { to: '/invoices', label: 'Invoices' },
    { to: '/account/keys', label: 'Account', current: (path) => path === '/account' || path.startsWith('/account/') },
  ],
  routes: [
    { pattern: '/', page: CatalogPage },
    { pattern: '/allocations', page: AllocationsPage },
    { pattern: '/allocations/:id', page: AllocationPage },
    { pattern: '/usage', page: UsagePage },
    { pattern: '/invoices', page: InvoicesPage },
    { pattern: '/invoices/:id', page: InvoicePage },
    { pattern: '/account', page: ApiKeysPage },
    { pattern: '/account/keys', page: ApiKeysPage },
    { pattern: '/account/people', page: PeoplePage },
    { pattern: '/account/budget', page: BudgetPage },
    { pattern: '/account/webhooks', page: WebhooksPage },
    { pattern: '/account/security', page: SecurityPage },
  ],
  refuse: (viewer) => (TENANT_ROLES.includes(viewer.role) ? null : <NotForThisKey viewer={viewer} />),
  banner: (viewer) => <SuspensionBanner viewer={viewer} />,
  signIn: keyOrPasswordSignIn,
  signedOutPages: { '/invitation': invitationPage('Portal') },
  secondFactorSetup: secondFactorRequired('Your organisation requires a second factor for every member.'),
};

function NotForThisKey({ viewer }: { viewer: Viewer }) {
  return (
    <Page title="This portal is for customers">
      <p>The portal shows a tenant's GPUs, usage and invoices. You are signed in with a key that belongs to no tenant.</p>
      {viewer.role === 'OPERATOR' && (
        <p>
          <a href="/console">Go to the operator console</a>
        </p>
      )}
      {viewer.role === 'PROVIDER' && (
        <p>
          <a href="/provider">Go to the provider console</a>
        </p>
      )}
    </Page>
  );
}
