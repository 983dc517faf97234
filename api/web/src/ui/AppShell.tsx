import type { ComponentChildren, ComponentType } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { type ApiError, asApiError, onUnauthenticated, request } from '../lib/api';
import { currentQuery, match, navigate, type Route, useLocation } from '../lib/router';
import { restoreSession, type Session, type SignInMethods, signInMethods, signOut } from '../lib/session';
import { Viewer as ViewerQuery } from '../shared/operations';
import { Layout, type NavItem } from './Layout';
import { ErrorNotice, Loading } from './Notice';
import { Page } from './Page';
import { defaultSignIn, SignIn, type SignInOptions } from './SignIn';
import { type Viewer, ViewerContext } from './viewer';

export type PageComponent = ComponentType<{ params: Record<string, string> }>;

export interface AppConfig {
  name: string;
  nav: NavItem[];
  routes: Route<PageComponent>[];
  /** Null when this viewer may use the app; else the page shown instead of it. */
  refuse: (viewer: Viewer) => ComponentChildren | null;
  banner?: (viewer: Viewer) => ComponentChildren;
  /** The sign-in forms and links, from what the deployment offers (default: an API key). */
  signIn?: (available: SignInMethods) => SignInOptions;
  /** A screen shown at `path` while signed out (the portal's invitation). */
  signedOutPages?: Record<string, ComponentType<{ onSignedIn: (session: Session) => void }>>;
}

const ENDED = 'Your session has ended. Please sign in again.';

type State =
  | { kind: 'checking' }
  | { kind: 'signed-out'; notice: string | null }
  | { kind: 'loading-viewer' }
  | { kind: 'failed'; error: ApiError }
  | { kind: 'ready'; viewer: Viewer };

/** Session lifecycle: restore or sign in, learn who the viewer is, then show the app. */
export function AppShell({ config }: { config: AppConfig }) {
  const [state, setState] = useState<State>({ kind: 'checking' });
  const [options, setOptions] = useState<SignInOptions | null>(null);
  const [signingOut, setSigningOut] = useState(false);
  const { path } = useLocation();

  const loadViewer = useCallback(async () => {
    setState({ kind: 'loading-viewer' });
    try {
      const { viewer } = await request(ViewerQuery, {});
      setState({ kind: 'ready', viewer });
    } catch (e) {
      const error = asApiError(e);
      if (error.code !== 'UNAUTHENTICATED') setState({ kind: 'failed', error });
    }
  }, []);

  const signedOut = useCallback((notice: string | null) => setState({ kind: 'signed-out', notice }), []);

  const started = useCallback(
    (session: Session) => {
      watchExpiry(session, () => signedOut(ENDED));
      void loadViewer();
    },
    [loadViewer, signedOut],
  );

  useEffect(() => {
    onUnauthenticated(() => signedOut(ENDED));
    void signInMethods().then((available) => setOptions((config.signIn ?? defaultSignIn)(available)));
    restoreSession()
      .then((session) => (session ? started(session) : signedOut(null)))
      .catch((e: unknown) => setState({ kind: 'failed', error: asApiError(e) }));
  }, [started, signedOut, config]);

  useEffect(() => {
    if (state.kind === 'ready' && path === '/signin') navigate('/', { replace: true });
  }, [state.kind, path]);

  const doSignOut = async () => {
    setSigningOut(true);
    await signOut().catch(() => undefined);
    setSigningOut(false);
    signedOut('You have signed out.');
  };

  const SignedOutPage = config.signedOutPages?.[path];
  if (SignedOutPage && state.kind !== 'checking' && state.kind !== 'loading-viewer') {
    return <SignedOutPage onSignedIn={(s) => (navigate('/', { replace: true }), started(s))} />;
  }
  switch (state.kind) {
    case 'checking':
    case 'loading-viewer':
      return <Splash />;
    case 'signed-out':
      if (!options) return <Splash />;
      return (
        <SignIn
          appName={config.name}
          methods={options.methods}
          links={options.links}
          notice={state.notice}
          error={path === '/signin' ? currentQuery().get('error') : null}
          onSignedIn={started}
        />
      );
    case 'failed':
      return <Failure error={state.error} onRetry={() => window.location.reload()} />;
    case 'ready':
      return <SignedIn config={config} viewer={state.viewer} signingOut={signingOut} onSignOut={doSignOut} />;
  }
}

let expiryTimer = 0;

/**
 * At the session's expiry, asks the server again: a session in use moves its idle
 * expiry on, so it is only over when the server says so.
 */
function watchExpiry(session: Session, expired: () => void): void {
  window.clearTimeout(expiryTimer);
  const ms = Date.parse(session.expiresAt) - Date.now();
  // setTimeout holds at most ~24.8 days; a later expiry is the server's to enforce.
  if (!Number.isFinite(ms) || ms > 2 ** 31 - 1) return;
  expiryTimer = window.setTimeout(() => {
    restoreSession()
      .then((next) => (next ? watchExpiry(next, expired) : expired()))
      .catch(() => watchExpiry({ ...session, expiresAt: new Date(Date.now() + 60_000).toISOString() }, expired));
  }, Math.max(1000, ms + 1000));
}

interface SignedInProps {
  config: AppConfig;
  viewer: Viewer;
  signingOut: boolean;
  onSignOut: () => void;
}

function SignedIn({ config, viewer, signingOut, onSignOut }: SignedInProps) {
  const { path } = useLocation();
  const refusal = config.refuse(viewer);
  const found = match(config.routes, path);
  const body = refusal ?? (found ? <found.page params={found.params} /> : <NotFound />);
  return (
    <ViewerContext.Provider value={viewer}>
      <Layout
        appName={config.name}
        nav={refusal ? [] : config.nav}
        path={path}
        viewer={viewer}
        signingOut={signingOut}
        onSignOut={onSignOut}
        banner={refusal ? null : config.banner?.(viewer)}
      >
        {body}
      </Layout>
    </ViewerContext.Provider>
  );
}

function Splash() {
  return (
    <main id="main" class="splash">
      <Loading label="Loading neocloud…" />
    </main>
  );
}

function Failure({ error, onRetry }: { error: ApiError; onRetry: () => void }) {
  return (
    <main id="main" class="signin">
      <div class="signin-card">
        <h1>neocloud is unavailable</h1>
        <ErrorNotice error={error} onRetry={onRetry} />
      </div>
    </main>
  );
}

function NotFound() {
  return (
    <Page title="Page not found">
      <p>There is nothing at this address. Use the navigation above to find your way.</p>
    </Page>
  );
}
