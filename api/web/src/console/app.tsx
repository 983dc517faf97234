import type { AppConfig } from '../ui/AppShell';
import { Page } from '../ui/Page';
import { lazyPage } from '../ui/lazy';
import { API_KEY_METHOD } from '../ui/SignIn';
import type { Viewer } from '../ui/viewer';
import { AuditLogPage } from './pages/AuditLogPage';
import { FleetPage } from './pages/FleetPage';
import { IngestPage } from './pages/IngestPage';
import { LedgerPage } from './pages/LedgerPage';
import { NodePage } from './pages/NodePage';
import { PlansPage } from './pages/PlansPage';
import { ProvidersPage } from './pages/ProvidersPage';
import { TenantPage } from './pages/TenantPage';
import { TenantsPage } from './pages/TenantsPage';

// Finance's pages load on first visit: the fleet page, the console's first, does not carry them.
const ProviderPage = lazyPage(() => import('./pages/ProviderPage').then((m) => m.ProviderPage));
const ProviderStatementPage = lazyPage(() => import('./pages/ProviderStatementPage').then((m) => m.ProviderStatementPage));
const ExchangeRatesPage = lazyPage(() => import('./pages/ExchangeRatesPage').then((m) => m.ExchangeRatesPage));

export const consoleApp: AppConfig = {
  name: 'Console',
  nav: [
    { to: '/', label: 'Fleet', current: (path) => path === '/' || path.startsWith('/nodes/') },
    { to: '/tenants', label: 'Tenants' },
    { to: '/ingest', label: 'Ingest health' },
    { to: '/plans', label: 'Plans' },
    { to: '/providers', label: 'Providers' },
    { to: '/ledger', label: 'Ledger' },
    { to: '/audit', label: 'Audit log' },
  ],
  routes: [
    { pattern: '/', page: FleetPage },
    { pattern: '/nodes/:id', page: NodePage },
    { pattern: '/tenants', page: TenantsPage },
    { pattern: '/tenants/:id', page: TenantPage },
    { pattern: '/ingest', page: IngestPage },
    { pattern: '/plans', page: PlansPage },
    { pattern: '/providers', page: ProvidersPage },
    // Before /providers/:id, which would take it for a provider's id.
    { pattern: '/providers/exchange-rates', page: ExchangeRatesPage },
    { pattern: '/providers/:id', page: ProviderPage },
    { pattern: '/providers/:id/statements/:statementId', page: ProviderStatementPage },
    { pattern: '/ledger', page: LedgerPage },
    { pattern: '/audit', page: AuditLogPage },
  ],
  refuse: (viewer) => (viewer.role === 'OPERATOR' ? null : <OperatorsOnly viewer={viewer} />),
  // Single sign-on leaves the page (the provider sends the browser back to /console, or
  // to /console/signin?error=… with the reason).
  signIn: (available) => ({
    methods: available.apiKey ? [API_KEY_METHOD] : [],
    links: available.oidc ? [{ href: '/v1/session/oidc', label: 'Sign in with single sign-on' }] : [],
  }),
};

/** Another role's key in the console: no data, a way to its own app. */
function OperatorsOnly({ viewer }: { viewer: Viewer }) {
  const provider = viewer.role === 'PROVIDER';
  return (
    <Page title="This console is for operators">
      <p>You are signed in with a {provider ? 'provider' : 'tenant'} key. The console runs the fleet and needs an operator key.</p>
      <p>{provider ? <a href="/provider">Go to the provider console</a> : <a href="/portal">Go to the customer portal</a>}</p>
    </Page>
  );
}
