import type { Role } from '../gql/schema';
import { invitationPage } from '../people/Invitation';
import type { AppConfig } from '../ui/AppShell';
import { Page } from '../ui/Page';
import { lazyPage } from '../ui/lazy';
import { keyOrPasswordSignIn } from '../ui/SignIn';
import type { Viewer } from '../ui/viewer';
import { NodesPage } from './pages/NodesPage';

// Every page but the nodes, the console's first, loads on first visit.
const NodePage = lazyPage(() => import('./pages/NodePage').then((m) => m.NodePage));
const RegisterNodePage = lazyPage(() => import('./pages/RegisterNodePage').then((m) => m.RegisterNodePage));
const StatementsPage = lazyPage(() => import('./pages/StatementsPage').then((m) => m.StatementsPage));
const StatementPage = lazyPage(() => import('./pages/StatementPage').then((m) => m.StatementPage));
const PayoutsPage = lazyPage(() => import('./pages/PayoutsPage').then((m) => m.PayoutsPage));
const AgreementPage = lazyPage(() => import('./pages/AgreementPage').then((m) => m.AgreementPage));
const KeysPage = lazyPage(() => import('./pages/KeysPage').then((m) => m.KeysPage));
const PeoplePage = lazyPage(() => import('./pages/PeoplePage').then((m) => m.PeoplePage));
const SecurityPage = lazyPage(() => import('./pages/SecurityPage').then((m) => m.SecurityPage));
// The screen of a session that may only set up a second factor (the provider requires
// one): seldom shown, its own chunk too.
const SecondFactorRequired = lazyPage(() =>
  import('../people/SecondFactorRequired').then((m) => m.secondFactorRequired('Your provider requires a second factor for everyone who signs in to this console.')),
);

export const providerApp: AppConfig = {
  name: 'Provider console',
  nav: [
    { to: '/', label: 'Nodes', current: (path) => path === '/' || path.startsWith('/nodes/') },
    { to: '/statements', label: 'Statements' },
    { to: '/payouts', label: 'Payouts' },
    { to: '/agreement', label: 'Agreement' },
    { to: '/keys', label: 'API keys' },
    { to: '/people', label: 'People' },
    { to: '/security', label: 'Security' },
  ],
  routes: [
    { pattern: '/', page: NodesPage },
    // Before /nodes/:id, which would take it for a node's id.
    { pattern: '/nodes/new', page: RegisterNodePage },
    { pattern: '/nodes/:id', page: NodePage },
    { pattern: '/statements', page: StatementsPage },
    { pattern: '/statements/:id', page: StatementPage },
    { pattern: '/payouts', page: PayoutsPage },
    { pattern: '/agreement', page: AgreementPage },
    { pattern: '/keys', page: KeysPage },
    { pattern: '/people', page: PeoplePage },
    { pattern: '/security', page: SecurityPage },
  ],
  refuse: (viewer) => (viewer.role === 'PROVIDER' ? null : <ProvidersOnly viewer={viewer} />),
  // A provider signs in with one of its keys, or as one of its people (email and password;
  // invited on the People page, where a lost password or phone is reset too, and where a
  // second factor may be required of everyone: until then one's session only sets one up).
  signIn: keyOrPasswordSignIn,
  signedOutPages: { '/invitation': invitationPage('Provider console') },
  secondFactorSetup: SecondFactorRequired,
};

/** The app where a key or a person of another role belongs, if it has one. */
function elsewhere(role: Role): { href: string; label: string } | null {
  if (role === 'OPERATOR') return { href: '/console', label: 'Go to the operator console' };
  if (role.startsWith('TENANT_')) return { href: '/portal', label: 'Go to the customer portal' };
  return null;
}

/** Another role's key or person in the provider console: no data, a way to its own app. */
function ProvidersOnly({ viewer }: { viewer: Viewer }) {
  const other = elsewhere(viewer.role);
  return (
    <Page title="This console is for providers">
      <p>
        The provider console shows a hardware provider its own nodes, statements, payouts and agreement, to its keys and its people. You are signed in with another kind of key, or as someone who
        is not one of a provider's people.
      </p>
      {other && (
        <p>
          <a href={other.href}>{other.label}</a>
        </p>
      )}
    </Page>
  );
}
