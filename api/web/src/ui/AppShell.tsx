import type { ComponentChildren, ComponentType } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { type ApiError, asApiError, onSecondFactorSetupRequired, onUnauthenticated, request } from '../lib/api';
import { currentQuery, match, navigate, type Route, useLocation } from '../lib/router';
import { gateOfError, gateOfSession, restoreSession, type Session, type SignInMethods, signInMethods, signOut } from '../lib/session';
import { Viewer as ViewerQuery } from '../shared/operations';
import { Button } from './Button';
import { Layout, type NavItem } from './Layout';
import { ErrorNotice, Loading } from './Notice';
import { Page } from './Page';
import { defaultSignIn, SignIn, SignInCard, type SignInOptions } from './SignIn';
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
  /**
   * The one screen of a session that may only set up a second factor (its tenant or
   * provider requires one): shown instead of the app, without its navigation.
   */
  secondFactorSetup?: ComponentType<SecondFactorSetupProps>;
}

export interface SecondFactorSetupProps {
  appName: string;
  /** The second factor is on (its recovery codes acknowledged): on into the app. */
  onDone: () => void;
  signingOut: boolean;
  onSignOut: () => void;
}

const ENDED = 'Your session has ended. Please sign in again.';

type State =
  | { kind: 'checking' }
  | { kind: 'signed-out'; notice: string | null }
  | { kind: 'loading-viewer' }
  | { kind: 'failed'; error: ApiError }
  | { kind: 'second-factor-setup' }
  | { kind: 'ready'; viewer: Viewer };

const SETUP: State = { kind: 'second-factor-setup' };

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
      // Signed out or the setup screen: the client's handlers have switched already.
      if (gateOfError(error.code) === 'failed') setState({ kind: 'failed', error });
    }
  }, []);

  const signedOut = useCallback((notice: string | null) => setState({ kind: 'signed-out', notice }), []);

  const started = useCallback(
    (session: Session) => {
      watchExpiry(session, () => signedOut(ENDED));
      if (gateOfSession(session) === 'second-factor-setup') setState(SETUP);
      else void loadViewer();
    },
    [loadViewer, signedOut],
  );

  // After the setup: the session, read again, now opens the app.
  const setUp = useCallback(() => {
    setState({ kind: 'checking' });
    restoreSession()
      .then((session) => (session ? started(session) : signedOut(ENDED)))
      .catch((e: unknown) => setState({ kind: 'failed', error: asApiError(e) }));
  }, [started, signedOut]);

  useEffect(() => {
    onUnauthenticated(() => signedOut(ENDED));
    // Every page at once may hear it (a requirement turned on during the session): one switch.
    onSecondFactorSetupRequired(() => setState((s) => (s.kind === 'second-factor-setup' || s.kind === 'signed-out' ? s : SETUP)));
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
    const provider = await signOut().catch(() => null);
    // Signed out here; single sign-on also signs out at the identity provider, which
    // sends the browser back.
    if (provider) return window.location.assign(provider);
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
    case 'second-factor-setup': {
      const Setup = config.secondFactorSetup ?? SetupElsewhere;
      return <Setup appName={config.name} onDone={setUp} signingOut={signingOut} onSignOut={doSignOut} />;
    }
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

/** An app without its own setup screen (the console) sends the person to the portal. */
function SetupElsewhere({ appName, signingOut, onSignOut }: SecondFactorSetupProps) {
  return (
    <SignInCard appName={appName} title="Set up a second factor">
      <p>Your organisation requires a second factor for every member. Set one up in the portal to continue.</p>
      <div class="form-actions-inline">
        <a class="btn btn-primary" href="/portal">
          Go to the portal
        </a>
        <Button variant="ghost" pending={signingOut} onClick={onSignOut}>
          Sign out
        </Button>
      </div>
    </SignInCard>
  );
}

function NotFound() {
  return (
    <Page title="Page not found">
      <p>There is nothing at this address. Use the navigation above to find your way.</p>
    </Page>
  );
}
