// A real OpenID Connect provider (the `oidc-provider` package) for the tests of the
// console's single sign-on, on 127.0.0.1:$OIDC_PORT, with one confidential client
// (neocloud-console / $OIDC_CLIENT_SECRET) redirecting to $OIDC_REDIRECT_URI, and back to
// $OIDC_POST_LOGOUT_URI after signing out there (RP-Initiated Logout); with
// $OIDC_BACKCHANNEL_LOGOUT_URI, a sign-out there is posted to it (Back-Channel Logout).
// Its sign-in page asks for a user name from ACCOUNTS (no password: the accounts are
// test fixtures) and grants what the client asked for. Prints "oidc-provider ready"
// once it listens.
import http from 'node:http';
import Provider from 'oidc-provider';

const ACCOUNTS = {
  ops: { email: 'ops@example.com', email_verified: true, name: 'Olga Ops', groups: [] },
  grp: { email: 'grp@example.com', email_verified: true, name: 'Gus Group', groups: ['neocloud-operators'] },
  eve: { email: 'eve@example.com', email_verified: true, name: 'Eve Tenant', groups: ['customers'] },
};

const port = Number(process.env.OIDC_PORT);
const issuer = `http://127.0.0.1:${port}`;
const provider = new Provider(issuer, {
  clients: [{
    client_id: 'neocloud-console',
    client_secret: process.env.OIDC_CLIENT_SECRET,
    redirect_uris: [process.env.OIDC_REDIRECT_URI],
    post_logout_redirect_uris: [process.env.OIDC_POST_LOGOUT_URI],
    // Signing out here ends the console's session too (Back-Channel Logout), by `sid`.
    ...(process.env.OIDC_BACKCHANNEL_LOGOUT_URI
      ? { backchannel_logout_uri: process.env.OIDC_BACKCHANNEL_LOGOUT_URI, backchannel_logout_session_required: true }
      : {}),
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  async findAccount(_ctx, id) {
    const account = ACCOUNTS[id];
    return account && { accountId: id, claims: async () => ({ sub: id, ...account }) };
  },
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'groups'] },
  conformIdTokenClaims: false,
  features: {
    devInteractions: { enabled: false },
    backchannelLogout: { enabled: true },
    rpInitiatedLogout: {
      enabled: true,
      // The package's own page loads a web font from the internet; this one loads nothing.
      async logoutSource(ctx, form) {
        ctx.body = `<!doctype html><html lang="en"><head><title>Identity provider sign-out</title></head>
<body><main><h1>Sign out of the identity provider?</h1>${form}
<button type="submit" form="op.logoutForm" value="yes" name="logout">Yes, sign me out</button>
<button type="submit" form="op.logoutForm">No, stay signed in</button></main></body></html>`;
      },
    },
  },
  cookies: { keys: ['neocloud-test-cookies'] },
  // The back-channel logout goes to the console on 127.0.0.1, which the package's guard
  // against requests to special-use addresses refuses: this test provider calls it as is.
  fetch: (url, options) => {
    delete options.dispatcher;
    return globalThis.fetch(url, options);
  },
});
provider.on('server_error', (_ctx, err) => console.error('oidc-provider error', err));
provider.on('backchannel.error', (_ctx, err) => console.error('oidc-provider back-channel logout failed', err));

const page = (uid, error) => `<!doctype html><html lang="en"><head><title>Identity provider sign-in</title></head>
<body><main><h1>Sign in to the identity provider</h1>${error ? `<p role="alert">${error}</p>` : ''}
<form method="post" action="/interaction/${uid}/login">
<label for="login">User name</label> <input id="login" name="login" autocomplete="username" autofocus>
<button type="submit">Continue</button></form></main></body></html>`;

async function body(req) {
  let text = '';
  for await (const chunk of req) text += chunk;
  return new URLSearchParams(text);
}

async function interaction(req, res, uid) {
  const details = await provider.interactionDetails(req, res);
  if (req.method === 'GET') {
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.end(page(uid));
    return;
  }
  const login = (await body(req)).get('login') ?? '';
  if (!ACCOUNTS[login]) {
    res.statusCode = 400;
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.end(page(uid, 'Unknown user'));
    return;
  }
  const grant = new provider.Grant({ accountId: login, clientId: details.params.client_id });
  grant.addOIDCScope(details.params.scope);
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { login: { accountId: login }, consent: { grantId } },
    { mergeWithLastSubmission: false });
}

const callback = provider.callback();
http.createServer((req, res) => {
  const match = /^\/interaction\/([^/?]+)(\/login)?/.exec(req.url ?? '');
  if (match) {
    interaction(req, res, match[1]).catch((err) => {
      console.error(err);
      res.statusCode = 500;
      res.end(String(err));
    });
    return;
  }
  callback(req, res);
}).listen(port, '127.0.0.1', () => console.log('oidc-provider ready'));
